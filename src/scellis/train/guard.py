"""Overflow guard (train layer): a device-side finite flag and an update it gates.

No host readback: ``finite_flag`` reduces the gradients to a 0-d bool on the device
(``sum(g * 0) == 0`` holds iff every element is finite: ``inf * 0`` and ``nan * 0``
are NaN, and NaN compares unequal), and ``guarded_step`` hands the flag to the
optimizer's fused update ops as their gate (``Optimizer.step_if``): where it is False
the kernels write nothing, so a non-finite step leaves the parameters and every state
buffer bitwise unchanged, with no copy of them made.

An optimizer whose step is its own (a subclass that replaces ``step``) gets the general
form instead: a copy of every flat buffer before the step, then ``where(ok, new, old)``
written back. Either way the host-side step counts (Adam's bias correction, SGD's
first-step flag) advance on a skipped step too, since the host does not know it was
skipped.
"""

from __future__ import annotations

import weakref

from ..autograd import no_grad
from ..base.dtypes import f32
from ..catalog.clip import NormClip, reduce_gradients, scale_gradients
from ..catalog.optim import Optimizer, flat_view
from ..devices.kernel_choice import current as kernel_choice
from ..ops.fused_step import FINITE, STATS
from ..runtime.creation import zeros
from ..runtime.dispatch import apply, apply_inplace
from ..runtime.tensor import Tensor


@no_grad()
def finite_flag(params) -> Tensor | None:
    """0-d bool on the device: every gradient element of ``params`` is finite (the sum
    of ``g * 0`` over every run of the gradients, and then over the runs' sums, is 0;
    any inf or NaN makes it NaN)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return None
    return reduce_gradients(grads, lambda f: (f * 0.0).sum()) == 0.0


def _live_buffers(optimizer) -> dict:
    """The optimizer's flat parameter and state buffers, keyed by (group, name)."""
    out = {}
    for gi, group in enumerate(optimizer.param_groups):
        params = group["params"]
        out[(gi, "params")] = flat_view(params)
        states = [optimizer.state_of(p) for p in params]
        for name in states[0]:
            if name != "step":
                out[(gi, name)] = flat_view([s[name] for s in states])
    return out


@no_grad()
def guarded_step(optimizer, ok: Tensor | None) -> None:
    """``optimizer.step()``, undone on the device where ``ok`` (0-d bool) is False."""
    if ok is None:
        optimizer.step()
        return
    if _fused_step(optimizer):
        optimizer.step_if(ok)
        return
    before = {k: apply("copy", (v,)) for k, v in _live_buffers(optimizer).items()}
    optimizer.step()
    for key, live in _live_buffers(optimizer).items():
        old = before.get(key)  # state made by this step was zeros before it
        kept = live.where(ok.expand(live.shape), old if old is not None else 0.0)
        apply_inplace("flat_gather", (kept,), (live,))


def _fused_step(optimizer) -> bool:
    """Whether ``optimizer.step()`` is the catalog's fused update, which takes a gate."""
    cls = type(optimizer)
    return (
        isinstance(optimizer, Optimizer)
        and cls.step is Optimizer.step
        and (cls._update is Optimizer._update)
    )


class StepStats:
    """The fused optimizer phase's verdict: ``grad_stats``' result (ops.fused_step: the
    norm, the clip factor and the finite flag), what the loop's tally reads in place
    of the flag; ``flag()`` gives the flag as a 0-d bool where something needs one."""

    def __init__(self, stats: Tensor):
        self.stats = stats

    def flag(self) -> Tensor:
        return self.stats[FINITE] != 0.0


# each optimizer's grad_stats target, made once: a buffer made before a recorded step
# and the same in every step, so a replayed step writes it in place
_STATS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _fusable(params, optimizer, clip, guard: bool) -> list[Tensor] | None:
    """The gradients the fused phase reads, or None where it does not apply: only on a
    tier that fuses training kernels, with the overflow guard on (the fused update
    skips a non-finite step), a catalog optimizer's fused update, a 2-norm clip or
    none, and f32 gradients on one device."""
    if not (guard and kernel_choice().fuses("guard") and _fused_step(optimizer)):
        return None
    if clip is not None and not (isinstance(clip, NormClip) and clip.norm_type == 2.0):
        return None
    grads = [p.grad for p in params if p.grad is not None]
    if not grads or any(g.dtype != f32 or g.device is not grads[0].device for g in grads):
        return None
    return [g if g.is_contiguous() else apply("copy", (g,)) for g in grads]


@no_grad()
def fused_update(grads, optimizer, clip) -> StepStats:
    """The guard, the clip and the step as two ops: ``grad_stats`` over every gradient
    where it lies, then the update reading its result."""
    stats = _STATS.get(optimizer)
    if stats is None or stats.device is not grads[0].device:
        stats = _STATS[optimizer] = zeros((STATS,), f32, grads[0].device)
    limit = clip.max_norm if clip is not None else 0.0
    apply_inplace("grad_stats", tuple(grads), (stats,), max_norm=limit)
    optimizer.step_with(stats)
    return StepStats(stats)


def loop_update(params, optimizer, clip, *, scale=None, guard: bool = True, scaler=None):
    """The train loop's optimizer phase (``train.step.train_step``'s ``update``), in its
    order: gradients divided by the loss ``scale`` (a 0-d device tensor, under loss
    scaling), the finite flag (with ``guard``), clipping, the guarded step, then the
    loss ``scaler``'s update from the flag. Returns the flag (None unguarded), or, on
    the ``fast`` tier's fused phase (``fused_update``), its ``StepStats``."""
    if scale is not None:
        scale_gradients(params, 1.0 / scale)
    params = list(params)
    grads = _fusable(params, optimizer, clip, guard)
    if grads is not None:
        done = fused_update(grads, optimizer, clip)
        if scaler is not None and scaler.dynamic:
            scaler.update(done.flag())
        return done
    ok = finite_flag(params) if guard else None
    if clip is not None:
        clip(params)
    guarded_step(optimizer, ok)
    if ok is not None and scaler is not None:
        scaler.update(ok)
    return ok
