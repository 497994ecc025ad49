"""Gradient clipping (catalog layer): by global norm and by value, torch semantics.

``clip_grad_norm_`` computes the norm of all gradients together and scales every
gradient by ``min(1, max_norm / (norm + 1e-6))`` (torch.nn.utils.clip_grad_norm_).
The norm and the scale stay on the device; nothing is read back, so it returns the
norm as a 0-d tensor and cannot offer torch's ``error_if_nonfinite``, which would need
its value. The gradients are replaced by scaled tensors (``p.grad`` is reassigned).

A reduction over every gradient (the norm here, the overflow guard's finite flag)
runs over flat *runs* of the gradients (``reduce_gradients``): consecutive gradients
gathered into one buffer of at most ``RUN_ELEMENTS`` elements, each run reduced, then
the runs' partial results reduced the same way. So the copies it makes stay at 64 MiB
whatever the model's size (a 100M-parameter model's gradients gathered at once were
400 MB, and as much again for the elementwise product reduced). A model whose
gradients fit one run reduces them exactly as one flat buffer.
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..runtime.creation import zeros
from ..runtime.dispatch import apply, apply_inplace
from ..runtime.functional import stack
from ..runtime.tensor import Tensor
from .optim.flat import flat_view, view_of


def _params(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    if hasattr(parameters, "parameters") and callable(parameters.parameters):
        return list(parameters.parameters())
    return [p[1] if isinstance(p, tuple) else p for p in parameters]


RUN_ELEMENTS = 1 << 24  # gradient elements gathered at a time (64 MiB of f32)


def _runs(grads: list[Tensor], limit: int) -> list[list[Tensor]]:
    """``grads`` in order, grouped so that each group holds at most ``limit`` elements
    (a gradient larger than that is a group by itself)."""
    runs: list[list[Tensor]] = [[]]
    size = 0
    for g in grads:
        if runs[-1] and size + g.numel > limit:
            runs.append([])
            size = 0
        runs[-1].append(g)
        size += g.numel
    return runs


def _flat(run: list[Tensor]) -> Tensor:
    """One flat tensor of ``run``'s elements in order: a lone contiguous gradient's own
    view, else a gathered copy."""
    if len(run) == 1 and run[0].is_contiguous():
        return run[0].reshape((run[0].numel,))
    whole = flat_view(run)  # already laid end to end (train.precision.widen_gradients)
    if whole is not None:
        return whole
    first = run[0]
    flat = zeros((sum(g.numel for g in run),), first.dtype, first.device)
    parts = [g if g.is_contiguous() else apply("copy", (g,)) for g in run]
    apply_inplace("flat_gather", tuple(parts), (flat,))
    return flat


def reduce_gradients(grads: list[Tensor], per_run, combine: str = "sum") -> Tensor:
    """A 0-d reduction over all of ``grads`` at once, run by run: ``per_run`` (a flat
    tensor -> its 0-d partial: a sum of squares, a max) of each run of at most
    ``RUN_ELEMENTS`` elements, then the partials stacked and reduced by their
    ``combine`` method (``sum`` or ``max``)."""
    first = grads[0]
    for g in grads:
        if g.device is not first.device or g.dtype != first.dtype:
            raise ScellisError("a gradient reduction needs them on one device in one dtype")
    runs = _runs(grads, RUN_ELEMENTS)
    if len(runs) == 1:
        return per_run(_flat(runs[0]))
    return getattr(stack([per_run(_flat(run)) for run in runs]), combine)()


@no_grad()
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:  # fmt: skip
    """Scale the gradients so their joint ``norm_type``-norm is at most ``max_norm``;
    returns the norm before clipping as a 0-d device tensor. ``error_if_nonfinite``
    reads the norm back to refuse a NaN or infinite one, as torch does; ``foreach``
    (torch's kernel choice) changes nothing here."""
    params = _params(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return zeros((), params[0].dtype if params else "f32", params[0].device if params else None)
    norm_type = float(norm_type)
    if math.isinf(norm_type):
        total = reduce_gradients(grads, lambda f: f.abs().amax(), "max")
    elif norm_type == 2.0:
        total = reduce_gradients(grads, lambda f: (f * f).sum()).sqrt()
    elif norm_type > 0:
        total = reduce_gradients(grads, lambda f: (f.abs() ** norm_type).sum())
        total = total ** (1.0 / norm_type)
    else:
        raise ScellisError(f"norm_type must be > 0 or inf, got {norm_type}")
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise ScellisError(
            f"the total norm of order {norm_type} of the gradients is not finite, so it "
            "cannot be clipped (error_if_nonfinite=False clips it anyway)"
        )
    coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
    scale_gradients(params, coef)
    return total


@no_grad()
def scale_gradients(params, factor: Tensor) -> None:
    """``p.grad = p.grad * factor`` (a 0-d device tensor) for every parameter with a
    gradient; gradients that are one flat range, in order, in one ``mul`` over it, each
    ``.grad`` then a view of the product."""
    held = [p for p in params if p.grad is not None]
    flat = flat_view([p.grad for p in held]) if len(held) > 1 else None
    if flat is None:
        for p in held:
            p.grad = p.grad * factor.cast(p.grad.dtype)
        return
    scaled = flat * factor.cast(flat.dtype)
    at = 0
    for p in held:
        p.grad = view_of(scaled, at, p.grad.shape)
        at += p.grad.numel


@no_grad()
def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] (torch clip_grad_value_)."""
    v = float(clip_value)
    for p in _params(parameters):
        if p.grad is not None:
            p.grad = p.grad.clamp(-v, v)


class NormClip:
    """Clipping by global norm, as a function of the parameters; its numbers stay
    readable, so the ``fast`` tier's optimizer phase can fold a 2-norm clip into its
    fused update (``train.guard``)."""

    def __init__(self, max_norm: float, norm_type: float = 2.0):
        self.max_norm, self.norm_type = max_norm, norm_type

    def __call__(self, parameters) -> Tensor:
        return clip_grad_norm_(parameters, self.max_norm, self.norm_type)


def clipper(spec):
    """The record's ``grad_clip`` as a function of the parameters (None: no clipping).
    ``spec`` is a number (a max norm) or a mapping: max_norm (and norm_type), or max_value."""
    if spec is None:
        return None
    spec = {"max_norm": spec} if isinstance(spec, (int, float)) else dict(spec)
    if "max_norm" in spec:
        return NormClip(float(spec["max_norm"]), float(spec.get("norm_type", 2.0)))
    if "max_value" in spec:
        v = float(spec["max_value"])
        return lambda ps: clip_grad_value_(ps, v)
    raise ScellisError("grad_clip takes max_norm (and norm_type) or max_value")
