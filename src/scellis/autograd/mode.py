"""Grad mode (autograd layer): whether new ops are recorded on the tape."""

from __future__ import annotations

import contextlib

_state = {"enabled": True}


def is_grad_enabled() -> bool:
    return _state["enabled"]


class no_grad(contextlib.ContextDecorator):
    """Ops inside record no tape (usable as ``with`` or as a decorator).

    One instance may be entered again before it exits (a decorated recursive function),
    so it keeps a stack of the states to restore, one per entry.
    """

    _flag = False

    def __init__(self):
        self._prev: list[bool] = []

    def __enter__(self):
        self._prev.append(_state["enabled"])
        _state["enabled"] = self._flag

    def __exit__(self, *exc):
        _state["enabled"] = self._prev.pop()
        return False


class enable_grad(no_grad):
    _flag = True


class inference_mode(no_grad):  # noqa: N801 (torch's name)
    """torch's ``inference_mode(mode=True)``: here the same as ``no_grad`` (there are no
    version counters to skip); ``inference_mode(False)`` changes nothing."""

    def __init__(self, mode: bool = True):
        super().__init__()
        self._mode = bool(mode)

    def __enter__(self):
        self._prev.append(_state["enabled"])
        if self._mode:
            _state["enabled"] = False


class set_grad_enabled(no_grad):  # noqa: N801 (torch's name)
    """torch's ``set_grad_enabled(mode)``: takes effect when called (as a function) and,
    used with ``with``, restores the previous mode at the exit."""

    def __init__(self, mode: bool):
        super().__init__()
        self._before = _state["enabled"]
        _state["enabled"] = bool(mode)

    def __enter__(self):
        self._prev.append(self._before)

    def __exit__(self, *exc):
        _state["enabled"] = self._prev.pop()
        return False
