"""The memory plan of a run (run layer): the plan of the step the loop runs.

The planner (ir layer) traces ``train.step.train_step`` with the update the loop runs
for the record's precision policy (``train.step.loop_update_for``). The run session
(``train``, ``resume``) and ``scellis plan`` both plan through ``plan_run``.
"""

from __future__ import annotations

from ..ir.limits import target_of_device
from ..ir.plan import Plan, make_plan, plan_or_refuse
from ..train.step import loop_update_for

__all__ = ["eval_batch_of", "plan_run"]


def eval_batch_of(record: dict) -> int:
    """The batch size evaluation runs at (the record's ``eval.batch_size``, else 64)."""
    return int((record.get("eval") or {}).get("batch_size", 64))


def plan_run(record: dict, target=None, *, device=None, budget: str | None = None,
             refuse: bool = False, **kwargs) -> Plan:  # fmt: skip
    """The memory plan of ``record``'s training step as the loop runs it, for ``target``
    (or ``device``'s limits under ``budget``); ``refuse``: a red plan raises (with its
    problems and remediations). ``kwargs`` go to ``make_plan`` (mode, batch, replay:
    the run option, on unless turned off)."""
    if target is None:
        target = target_of_device(device, budget)
    kwargs.setdefault("replay", True)
    kwargs.setdefault("eval_batch", eval_batch_of(record))
    kwargs.setdefault("update", loop_update_for(record))
    return (plan_or_refuse if refuse else make_plan)(record, target, **kwargs)
