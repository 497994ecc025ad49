"""Backward hooks of a module (catalog layer): torch's ``register_full_backward_hook``
and ``register_full_backward_pre_hook``.

``hook(module, grad_input, grad_output)`` runs once per backward through a call of the
module: ``grad_output`` the gradients of its tensor results (None for one no gradient
reached), ``grad_input`` that of its tensor argument (``(None,)`` where it needs none),
and a tuple it returns replaces ``grad_input``. A pre-hook ``hook(module, grad_output)``
runs as the result's gradient arrives, and a tuple it returns replaces ``grad_output``
(one differentiable result only here). As torch does, the call's argument and
results pass through identity functions whose backward records what reaches them: the
results' before the module's own VJPs run, the argument's after.

The module must be called with one tensor argument (any keyword arguments): a call with
several would need their gradients together, and the tape gives each node one result.
"""

from __future__ import annotations

import itertools

from ..autograd import Function, is_grad_enabled
from ..base.errors import ScellisError
from ..runtime.tensor import Tensor
from .module_hooks import RemovableHandle

_ids = itertools.count()


def add_grad_hook(module, hook, kind: str) -> RemovableHandle:
    """``kind``: ``post`` (full backward hook) or ``pre`` (full backward pre-hook)."""
    table = module.__dict__.setdefault("_grad_hooks", {"post": {}, "pre": {}})
    key = next(_ids)
    table[kind][key] = hook
    return RemovableHandle(table[kind], key)


def grad_hooks_apply(module) -> tuple[list, list] | None:
    """The module's (backward hooks, pre-hooks) where this call records a tape."""
    table = module.__dict__.get("_grad_hooks")
    if not table or not is_grad_enabled() or not (table["post"] or table["pre"]):
        return None
    return list(table["post"].values()), list(table["pre"].values())


class _Call:
    """One hooked call: the gradients of its results as they arrive."""

    def __init__(self, module, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_output: list = []

    def arrive(self, k: int, g):
        """Result ``k``'s gradient, after the pre-hooks."""
        for hook in list(self.pre_hooks):
            got = hook(self.module, (g,))
            if got is not None:
                g = tuple(got)[0]
        self.grad_output[k] = g
        return g

    def fire(self, grad_input: tuple) -> tuple:
        out = tuple(self.grad_output)
        for hook in list(self.hooks):
            got = hook(self.module, grad_input, out)
            if got is not None:
                grad_input = tuple(got)
        return grad_input


class _Result(Function):
    @staticmethod
    def forward(ctx, call: _Call, k: int, y):
        ctx.call, ctx.k = call, k
        return y

    @staticmethod
    def backward(ctx, g):
        return None, None, ctx.call.arrive(ctx.k, g)


class _Argument(Function):
    @staticmethod
    def forward(ctx, call: _Call, x):
        ctx.call = call
        return x

    @staticmethod
    def backward(ctx, g):
        return None, ctx.call.fire((g,))[0]


class _Unreached(Function):
    """The last result's pass-through where the argument needs no gradient: the hook
    fires there, with ``grad_input`` (None,)."""

    @staticmethod
    def forward(ctx, call: _Call, k: int, y):
        ctx.call, ctx.k = call, k
        return y

    @staticmethod
    def backward(ctx, g):
        g = ctx.call.arrive(ctx.k, g)
        ctx.call.fire((None,))
        return None, None, g


def call_with_grad_hooks(module, hooks: tuple, forward, args: tuple, kwargs: dict):
    """``forward(*args, **kwargs)`` with the module's backward hooks (and pre-hooks)
    around it."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) != 1:
        raise ScellisError(
            f"{type(module).__name__}: a full backward hook needs a call with one tensor "
            f"argument, got {len(tensors)}; hook the tensors instead (tensor.register_hook)"
        )
    x = tensors[0]
    call = _Call(module, *hooks)
    if x.requires_grad:
        x = _Argument.apply(call, x)
    out = forward(*[x if isinstance(a, Tensor) else a for a in args], **kwargs)
    many = isinstance(out, tuple)
    outs = list(out) if many else [out]
    call.grad_output = [None] * len(outs)
    last = max((k for k, y in enumerate(outs) if _differentiable(y)), default=None)
    if call.pre_hooks and sum(map(_differentiable, outs)) > 1:
        raise ScellisError(
            f"{type(module).__name__}: a full backward pre-hook needs a call with one "
            "differentiable result; hook the results instead (tensor.register_hook)"
        )
    for k, y in enumerate(outs):
        if _differentiable(y):
            mark = _Unreached if k == last and not x.requires_grad else _Result
            outs[k] = mark.apply(call, k, y)
    return tuple(outs) if many else outs[0]


def _differentiable(y) -> bool:
    return isinstance(y, Tensor) and y.requires_grad
