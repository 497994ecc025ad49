"""``autograd.grad`` (autograd layer): gradients returned, not accumulated into ``.grad``.

torch's ``torch.autograd.grad(outputs, inputs)`` over the one backward walk of
``tape``: the inputs keep their gradient for the duration (``retain_grad``), every
leaf's ``.grad`` is put back as it was, and the gradients come back as a tuple.
"""

from __future__ import annotations

from ..base.errors import AutogradError
from .rules import VJP
from .tape import _topo
from .tape import backward as _backward


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _first_order_only(create_graph, where: str) -> None:
    if create_graph:
        raise AutogradError(f"{where}(create_graph=True): higher-order gradients are not supported")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch's ``autograd.backward``: one tensor or a sequence, each walked in turn (the
    graph kept until the last), their gradients summed into the leaves' ``.grad``."""
    _first_order_only(create_graph, "autograd.backward")
    if inputs is not None:
        raise AutogradError("autograd.backward(inputs=...) is not supported: use autograd.grad")
    outs = _as_tuple(tensors)
    gouts = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outs)
    for i, (o, g) in enumerate(zip(outs, gouts)):
        _backward(o, g, retain_graph=bool(retain_graph) or i < len(outs) - 1, rules=VJP)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):  # fmt: skip
    """d(outputs)/d(inputs), one tensor per input (None for an unused one where
    ``allow_unused``). Higher-order gradients (``create_graph``) are not supported."""
    _first_order_only(create_graph, "autograd.grad")
    outs, ins = _as_tuple(outputs), _as_tuple(inputs)
    gouts = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    leaves = {id(t): t for o in outs for t in _topo(o) if t._node is None and hasattr(t, "grad")}
    kept = {k: t.grad for k, t in leaves.items()}
    flags = [(t, t.grad, t._retains_grad) for t in ins]
    try:
        for t in ins:
            t.grad, t._retains_grad = None, True
        for leaf in leaves.values():
            leaf.grad = None
        for i, (o, g) in enumerate(zip(outs, gouts)):
            last = i == len(outs) - 1
            _backward(o, g, retain_graph=bool(retain_graph) or not last, rules=VJP)
        found = tuple(t.grad for t in ins)
    finally:
        for k, t in leaves.items():
            t.grad = kept[k]
        for t, g, r in flags:
            t.grad, t._retains_grad = g, r
    if not allow_unused and any(g is None for g in found):
        raise AutogradError(
            "one of the inputs was not used to compute the outputs (allow_unused=True)"
        )
    return found


def Variable(data, requires_grad: bool = False, volatile: bool = False):  # noqa: N802
    """torch's old ``autograd.Variable``, which is a tensor now: ``data`` itself, or a
    new leaf on the same values that requires grad."""
    return data.detach().requires_grad_(True) if requires_grad else data
