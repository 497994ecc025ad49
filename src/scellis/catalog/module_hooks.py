"""Forward hooks of a module (catalog layer): torch's ``register_forward_hook``.

Kept apart from ``module`` so a call without hooks stays one dictionary look-up and
one ``forward``: the hooked path is here.
"""

from __future__ import annotations

import itertools

_ids = itertools.count()


class RemovableHandle:
    """What ``register_forward_hook`` returns: ``remove()`` takes the hook away (also
    as a context manager, as torch's handle)."""

    def __init__(self, table: dict, key: int):
        self._table, self.id = table, key

    def remove(self) -> None:
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def add_hook(module, kind: str, hook, with_kwargs: bool) -> RemovableHandle:
    hooks = module.__dict__.setdefault("_hooks", {"pre": {}, "post": {}})
    key = next(_ids)
    hooks[kind][key] = (hook, bool(with_kwargs))
    return RemovableHandle(hooks[kind], key)


def call_with_hooks(module, hooks: dict, args: tuple, kwargs: dict):
    """``module.forward`` between its pre-hooks and hooks, in registration order."""
    for hook, with_kwargs in list(hooks["pre"].values()):
        if with_kwargs:
            got = hook(module, args, kwargs)
            if got is not None:
                args, kwargs = got
        else:
            got = hook(module, args)
            if got is not None:
                args = got if isinstance(got, tuple) else (got,)
    out = module.forward(*args, **kwargs)
    for hook, with_kwargs in list(hooks["post"].values()):
        got = hook(module, args, kwargs, out) if with_kwargs else hook(module, args, out)
        if got is not None:
            out = got
    return out
