"""Grad mode (autograd layer): whether new ops are recorded on the tape."""

from __future__ import annotations

import contextlib

_state = {"enabled": True}


def is_grad_enabled() -> bool:
    return _state["enabled"]


@contextlib.contextmanager
def _set(flag: bool):
    prev = _state["enabled"]
    _state["enabled"] = flag
    try:
        yield
    finally:
        _state["enabled"] = prev


class no_grad(contextlib.ContextDecorator):
    """Ops inside record no tape (usable as ``with`` or as a decorator)."""

    def __enter__(self):
        self._cm = _set(False)
        self._cm.__enter__()

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)


class enable_grad(no_grad):
    def __enter__(self):
        self._cm = _set(True)
        self._cm.__enter__()
