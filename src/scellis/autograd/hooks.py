"""Gradient hooks on tensors (autograd layer): torch's ``Tensor.register_hook``.

``hook(grad)`` sees a tensor's whole gradient once the backward walk has added up every
share of it, and a tensor it returns takes that gradient's place. For a tensor an op
made, the hooks run in front of its node's VJP (the node's rule is wrapped, so the walk
itself is unchanged); for a leaf, where the walk writes ``.grad`` (``leaf_grad``).
"""

from __future__ import annotations

import weakref

from ..base.errors import AutogradError
from .rules import VJP

# id of a leaf tensor -> (a weak reference to it, its hooks in registration order); the
# entry goes with the tensor. Keyed by id: a tensor's ``==`` compares values.
_LEAF_HOOKS: dict[int, tuple] = {}


class HookHandle:
    """What ``register_hook`` returns: ``remove()`` takes the hook away."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _run(hooks: list, g):
    for hook in list(hooks):
        got = hook(g)
        if got is not None:
            if tuple(got.shape) != tuple(g.shape):
                raise AutogradError(
                    f"a gradient hook returned shape {tuple(got.shape)} for a gradient of "
                    f"shape {tuple(g.shape)}"
                )
            g = got
    return g


def leaf_grad(t, g):
    """The gradient written to leaf ``t``'s ``.grad``, after its hooks."""
    entry = _LEAF_HOOKS.get(id(t)) if _LEAF_HOOKS else None
    return _run(entry[1], g) if entry and entry[1] and entry[0]() is t else g


def _leaf_hooks(t) -> list:
    entry = _LEAF_HOOKS.get(id(t))
    if entry is None or entry[0]() is not t:
        key = id(t)
        entry = _LEAF_HOOKS[key] = (weakref.ref(t, lambda _: _LEAF_HOOKS.pop(key, None)), [])
    return entry[1]


def _node_hooks(node) -> list:
    """The hook list in front of ``node``'s VJP, wrapping its rule the first time."""
    rule = node.rule
    hooks = getattr(rule, "hooks", None)
    if hooks is not None:
        return hooks
    hooks = []

    def hooked(n, g):
        return (rule or VJP[n.op])(n, _run(hooks, g))

    hooked.hooks = hooks
    node.rule = hooked
    return hooks


def register_hook(t, hook) -> HookHandle:
    if not t.requires_grad:
        raise AutogradError("register_hook on a tensor that does not require grad")
    hooks = _leaf_hooks(t) if t._node is None else _node_hooks(t._node)
    hooks.append(hook)
    return HookHandle(hooks, hook)
