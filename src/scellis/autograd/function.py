"""User-written autograd functions (autograd layer): torch's ``autograd.Function``.

A subclass gives ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` (or torch's newer
split: ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``); ``apply`` runs the
forward with the tape off and puts one node per differentiable result on the tape, whose
VJP is the subclass's ``backward``. The tape gives each node exactly one result, so a
function with several results has one node for each: each node calls ``backward`` with its
own result's gradient and zeros for the others (None where ``set_materialize_grads(False)``),
and the tape adds their shares. A VJP is linear in the incoming gradients, so the sum is
what one call with every gradient would give; the price is one ``backward`` call per result
that a gradient reaches.

This layer sits under the runtime, so tensors are told apart by what they carry (a tape
slot and ``requires_grad``), not by their class.
"""

from __future__ import annotations

import functools

from ..base.errors import AutogradError
from .mode import is_grad_enabled, no_grad
from .tape import Node


def _is_tensor(x) -> bool:
    return hasattr(x, "_node") and hasattr(x, "requires_grad") and hasattr(x, "shape")


class FunctionCtx:
    """What ``forward`` leaves for ``backward``: saved tensors, which inputs need a
    gradient, and any attribute the user sets on it (``ctx.k = 3``)."""

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved: tuple = ()
        self._versions: tuple = ()
        self._non_differentiable: set[int] = set()

    def save_for_backward(self, *tensors) -> None:
        self._saved = tensors
        self._versions = tuple(getattr(t, "_version", None) for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors, refused (as torch does) where one was changed in place
        after it was saved: its value is no longer the one the forward saw."""
        for k, (t, v) in enumerate(zip(self._saved, self._versions)):
            if v is not None and t._version != v:
                raise AutogradError(
                    f"saved tensor {k} (shape {tuple(t.shape)}) was changed by an in-place "
                    "operation after save_for_backward; save a .clone() instead"
                )
        return self._saved

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Accepted for torch's sake: a result written in place is recorded like any other."""

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class Function:
    """torch's ``autograd.Function``: subclass it, then call ``MyFn.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("an autograd.Function subclass must define forward")

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("an autograd.Function subclass must define backward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        needs = tuple(_is_tensor(a) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        with no_grad():
            if _splits_context(cls):
                out = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, out)
            else:
                out = cls.forward(ctx, *args, **kwargs)
        if not (is_grad_enabled() and any(needs)):
            return out
        return _record(cls, ctx, args, out)


def _splits_context(cls) -> bool:
    """Whether the subclass uses torch's split form (``setup_context`` defined)."""
    return any("setup_context" in vars(k) for k in cls.__mro__ if k is not Function)


def _record(cls, ctx: FunctionCtx, args: tuple, out):
    many = isinstance(out, tuple)
    outs = list(out) if many else [out]
    inputs = tuple(a for a in args if _is_tensor(a))
    for i, o in enumerate(outs):
        if not _is_tensor(o) or not o.dtype.is_float or id(o) in ctx._non_differentiable:
            continue
        if any(o is a for a in inputs):
            o = outs[i] = o.detach()  # an input handed back: its own tape entry stays
        _attach(cls, ctx, args, inputs, outs, i, o)
    _unsave_results(ctx, outs)
    return tuple(outs) if many else outs[0]


def _attach(cls, ctx, args, inputs, outs, i, o) -> None:
    shapes = [(x.shape, x.dtype) if _is_tensor(x) else None for x in outs]
    node = Node(
        f"function:{cls.__name__}",
        inputs,
        {},
        tuple(x.requires_grad for x in inputs),
        o.shape,
        o.dtype,
        tuple(False for _ in inputs),  # backward reads ctx, never the node's inputs
    )
    node.rule = lambda n, g: _vjp(cls, ctx, args, shapes, i, g)
    o._node = node
    o.requires_grad = True


def _unsave_results(ctx: FunctionCtx, outs: list) -> None:
    """A saved result is kept detached: holding it as it is would hold its own node."""
    ids = {id(o): o for o in outs if _is_tensor(o)}
    if any(id(t) in ids for t in ctx._saved):
        ctx._saved = tuple(t.detach() if id(t) in ids else t for t in ctx._saved)


def _vjp(cls, ctx, args, shapes, i, g) -> tuple:
    grads = []
    for k, spec in enumerate(shapes):
        if k == i:
            grads.append(g)
        elif spec is None or not ctx.materialize_grads:
            grads.append(None)
        else:
            grads.append(g.new_full(spec[0], 0, dtype=spec[1]))
    got = cls.backward(ctx, *grads)
    got = got if isinstance(got, tuple) else (got,)
    if len(got) < len(args) or any(x is not None for x in got[len(args) :]):
        raise AutogradError(
            f"{cls.__name__}.backward returned {len(got)} gradients for {len(args)} forward "
            "arguments (give None for each one that has no gradient)"
        )
    return tuple(gx for a, gx in zip(args, got) if _is_tensor(a))


def once_differentiable(fn):
    """torch's decorator for a ``backward`` that is not itself differentiable: it runs
    with the tape off (backward here always does)."""

    @functools.wraps(fn)
    def run(ctx, *grads):
        with no_grad():
            return fn(ctx, *grads)

    return run
