"""The train loop's optimizer phase for the memory planner (cli layer; not a command).

The planner (ir layer) traces a step; the train layer above it owns the overflow
guard. This hands the planner the loop's own update, in the loop's order (finite
flag, clipping, the guarded step), so the plan counts the guard's copies.
"""

from __future__ import annotations

from ..train.guard import finite_flag, guarded_step


def loop_update(params, optimizer, clip) -> None:
    ok = finite_flag(params)
    if clip is not None:
        clip(params)
    guarded_step(optimizer, ok)
