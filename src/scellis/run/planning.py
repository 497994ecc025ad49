"""The memory plan of a run (run layer): the plan of the step the loop runs.

The planner (ir layer) traces ``train.step.train_step`` with the update the loop runs
for the record's precision policy (``train.step.loop_update_for``). The run session
(``train``, ``resume``), ``scellis plan`` and the tab plan through ``plan_steps``: the
replayed step where it fits, else the eager step (a recorded schedule keeps the storages
of its step, which it reused by liveness, and copies of its inputs: a little over the
eager peak), with the plan saying why. A plan that is not green carries its
remediations, each planned through ``plan_steps`` itself on the record with its edit
applied, so the verdict a fix promises is the one the run would get.
"""

from __future__ import annotations

from ..ir.limits import human, target_of_device
from ..ir.plan import Plan, make_plan, plan_or_refuse
from ..ir.remedies import apply_edits, remediations
from ..train.step import loop_update_for

__all__ = ["eval_batch_of", "plan_run", "plan_steps"]


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


def plan_steps(record: dict, target=None, *, device=None, budget: str | None = None,
               replay: bool = True, validate: bool = True, remediate: bool = True,
               **kwargs) -> tuple[Plan, bool]:  # fmt: skip
    """(plan, replay): the plan of the step the run will take. Replayed steps when asked
    for and they fit; when only their residency is over the budget and eager steps fit,
    the eager plan, made yellow, with a warning naming both peaks. ``validate``: the run
    evaluates on the validation split (its forward is planned beside the step's state).
    ``kwargs``: ``mode`` (a record edit is the way to plan another batch size or
    precision)."""
    if target is None:
        target = target_of_device(device, budget)
    plan, settled = _settled(record, target, replay, _validating(kwargs, validate))
    if remediate and plan.verdict != "green":

        def replan(edits: dict, options: dict) -> Plan:
            # the replay the run asks for, not the one it settled on: an edited record
            # may replay again, as its run would
            edited = apply_edits(record, edits)
            kw = _validating(kwargs, options.get("validate", validate))
            return _settled(edited, target, options.get("replay", replay), kw)[0]

        plan.remediations = remediations(record, plan, replan)
    return plan, settled


def _validating(kwargs: dict, validate: bool) -> dict:
    """``kwargs`` with no evaluation forward planned when the run does not validate."""
    return kwargs if validate else {**kwargs, "eval_batch": 0}


def _settled(record: dict, target, replay: bool, kwargs: dict) -> tuple[Plan, bool]:
    kwargs = {**kwargs, "remediate": False}
    plan = plan_run(record, target, replay=replay, **kwargs)
    if plan.verdict != "red" or not replay:
        return plan, replay
    eager = plan_run(record, target, replay=False, **kwargs)
    if eager.verdict == "red":
        return plan, replay
    eager.warnings.append(
        f"replayed steps would hold {human(plan.peak)}, over the budget of "
        f"{human(plan.target.budget)}: the run takes eager steps ({human(eager.peak)})"
    )
    eager.verdict = "yellow"
    return eager, False
