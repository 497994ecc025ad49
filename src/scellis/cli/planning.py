"""The train loop's optimizer phase for the memory planner (cli layer; not a command).

The planner (ir layer) traces a step; the train layer above it owns the overflow
guard and the loss scale. ``loop_update_for`` hands the planner the loop's own update
in the loop's order (unscale the gradients under loss scaling, finite flag,
clipping, the guarded step), so the plan counts what those allocate.
"""

from __future__ import annotations

from ..base.dtypes import f32
from ..runtime.creation import full
from ..train.guard import finite_flag, guarded_step, scale_grads


def _loss_scaled(record: dict) -> bool:
    spec = record.get("precision")
    if isinstance(spec, dict):
        scaling = spec.get("loss_scaling", "dynamic")
        return spec.get("policy") == "mixed_f16" and scaling != "none"
    return spec == "mixed_f16"


def loop_update(params, optimizer, clip) -> None:
    """The loop's optimizer phase for an f32 run (no loss scale)."""
    ok = finite_flag(params)
    if clip is not None:
        clip(params)
    guarded_step(optimizer, ok)


def loop_update_for(record: dict):
    """The loop's optimizer phase for ``record``'s precision policy."""
    if not _loss_scaled(record):
        return loop_update

    def update(params, optimizer, clip) -> None:
        # the loop divides the gradients by its 0-d device scale (new gradient tensors)
        inv = 1.0 / full((), 2.0**16, f32, params[0].device)
        scale_grads(params, inv)
        loop_update(params, optimizer, clip)

    return update
