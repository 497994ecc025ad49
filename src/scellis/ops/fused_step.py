"""The fused optimizer phase (ops layer): gradient statistics and the step's tally.

The ``fast`` tier's optimizer phase (``train.guard``) replaces the overflow guard's
finite flag, the clipping norm, the clip factor and the per-gradient scaling (on the
char Transformer about fifty small launches per step) with one in-place op over every
gradient where it lies:

``grad_stats(g_1, ..., g_k) -> stats`` writes a flat f32 [3] target: the gradients'
joint 2-norm, the clip factor ``min(1, max_norm / (norm + 1e-6))`` (torch's
``clip_grad_norm_``; 1 when ``max_norm`` is 0, no clipping) and 1.0 where every element
is finite, else 0.0. The optimizer's update reads ``stats`` in place of the gate
(``ops.optim``, the ``stats`` attr): it writes nothing where the flag is 0 and
multiplies each gradient element by the factor as it reads it, the very f32 product
that clipping would have stored into the gradient.

``step_tally(loss, stats) -> (total, good, skipped)`` adds one step to the train
loop's device accumulators in place: the loss where the step was kept, and the kept
and skipped counts; the same sums the unfused loop computes, without new tensors to
copy back into the replayed step's pinned buffers.
"""

from __future__ import annotations

from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register

STATS = 3  # norm, clip factor, finite flag
NORM, FACTOR, FINITE = range(STATS)
CLIP_EPS = 1e-6  # torch's clip_grad_norm_ adds it to the norm


def _float(s: Spec, what: str) -> None:
    if s.dtype.name not in ("f32", "f64"):
        raise DTypeError(f"{what} is f32 (or f64 on the reference device), got {s.dtype}")


def _stats_infer(specs: list[Spec], attrs: dict) -> list[Spec]:
    *grads, stats = specs
    if not grads:
        raise ShapeError("grad_stats takes at least one gradient and the stats target")
    for g in grads:
        _float(g, "a gradient")
    if tuple(stats.shape) != (STATS,):
        raise ShapeError(f"grad_stats writes a [{STATS}] target, got {tuple(stats.shape)}")
    _float(stats, "grad_stats' target")
    if float(attrs.get("max_norm", 0.0)) < 0:
        raise ShapeError(f"grad_stats: max_norm must be >= 0, got {attrs['max_norm']}")
    return [stats]


def _tally_infer(specs: list[Spec], attrs: dict) -> list[Spec]:
    if len(specs) != 5:
        raise ShapeError("step_tally takes the loss, the stats and three accumulators")
    loss, stats, *acc = specs
    if tuple(stats.shape) != (STATS,):
        raise ShapeError(f"step_tally reads a [{STATS}] stats tensor, got {tuple(stats.shape)}")
    for s in (loss, *acc):
        if tuple(s.shape) != () or s.dtype != loss.dtype:
            raise ShapeError("step_tally's loss and accumulators are 0-d, of one dtype")
        _float(s, "step_tally's operand")
    return list(acc)


register(
    OpDef(
        "grad_stats",
        "optim",
        -1,
        _stats_infer,
        attrs=("max_norm",),
        doc="every gradient's joint norm, the clip factor and the finite flag, in place",
        tags=frozenset({"inplace"}),
    )
)
register(
    OpDef(
        "step_tally",
        "optim",
        2,
        _tally_infer,
        doc="the train loop's loss sum and kept/skipped counts, advanced in place",
        tags=frozenset({"inplace"}),
    )
)
