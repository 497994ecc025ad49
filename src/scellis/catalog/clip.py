"""Gradient clipping (catalog layer): by global norm and by value, torch semantics.

``clip_grad_norm_`` computes the norm of all gradients together and scales every
gradient by ``min(1, max_norm / (norm + 1e-6))`` (torch.nn.utils.clip_grad_norm_).
The norm and the scale stay on the device (the gradients are gathered into one flat
buffer and reduced there); nothing is read back, so it returns the norm as a 0-d
tensor and cannot offer torch's ``error_if_nonfinite``, which would need its value.
The gradients are replaced by scaled tensors (``p.grad`` is reassigned).
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..runtime.creation import zeros
from ..runtime.dispatch import apply, apply_inplace
from ..runtime.tensor import Tensor


def _params(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    if hasattr(parameters, "parameters") and callable(parameters.parameters):
        return list(parameters.parameters())
    return [p[1] if isinstance(p, tuple) else p for p in parameters]


def _flat_grads(grads: list[Tensor]) -> Tensor:
    first = grads[0]
    for g in grads:
        if g.device is not first.device or g.dtype != first.dtype:
            raise ScellisError("clip_grad_norm_ needs the gradients on one device in one dtype")
    n = sum(g.numel for g in grads)
    flat = zeros((n,), first.dtype, first.device)
    parts = [g if g.is_contiguous() else apply("copy", (g,)) for g in grads]
    apply_inplace("flat_gather", tuple(parts), (flat,))
    return flat


@no_grad()
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0) -> Tensor:
    """Scale the gradients so their joint ``norm_type``-norm is at most ``max_norm``;
    returns the norm before clipping as a 0-d device tensor."""
    params = _params(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return zeros((), params[0].dtype if params else "f32", params[0].device if params else None)
    flat = _flat_grads(grads)
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        total = flat.abs().max()
    elif norm_type == 2.0:
        total = (flat * flat).sum().sqrt()
    elif norm_type > 0:
        total = (flat.abs() ** norm_type).sum() ** (1.0 / norm_type)
    else:
        raise ScellisError(f"norm_type must be > 0 or inf, got {norm_type}")
    coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * coef
    return total


@no_grad()
def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] (torch clip_grad_value_)."""
    v = float(clip_value)
    for p in _params(parameters):
        if p.grad is not None:
            p.grad = p.grad.clamp(-v, v)


def clipper(spec):
    """The record's ``grad_clip`` as a function of the parameters (None: no clipping).
    ``spec`` is a number (a max norm) or a mapping: max_norm (and norm_type), or max_value."""
    if spec is None:
        return None
    spec = {"max_norm": spec} if isinstance(spec, (int, float)) else dict(spec)
    if "max_norm" in spec:
        n, t = float(spec["max_norm"]), float(spec.get("norm_type", 2.0))
        return lambda ps: clip_grad_norm_(ps, n, t)
    if "max_value" in spec:
        v = float(spec["max_value"])
        return lambda ps: clip_grad_value_(ps, v)
    raise ScellisError("grad_clip takes max_norm (and norm_type) or max_value")
