"""The memory plan of a run, with the loop's own step (train layer).

The planner (ir layer) traces ``ir.step.train_step``, the function the loop runs;
the loop's optimizer phase (overflow guard, loss-scale unscaling) lives here, above
it, so this layer hands it down: ``loop_update_for`` is the update the loop runs for
a record's precision policy, and ``plan_run`` plans a record for a device with it.
The CLI (``train``, ``resume``, ``plan``) and the tab both plan through here.
"""

from __future__ import annotations

from ..base.dtypes import f32
from ..ir.limits import target_of_device
from ..ir.plan import Plan, make_plan, plan_or_refuse
from ..runtime.creation import full
from .guard import loop_update

__all__ = ["eval_batch_of", "loop_update", "loop_update_for", "plan_run"]


def _loss_scaled(record: dict) -> bool:
    spec = record.get("precision")
    if isinstance(spec, dict):
        scaling = spec.get("loss_scaling", "dynamic")
        return spec.get("policy") == "mixed_f16" and scaling != "none"
    return spec == "mixed_f16"


def loop_update_for(record: dict):
    """The loop's optimizer phase for ``record``'s precision policy."""
    if not _loss_scaled(record):
        return loop_update

    def update(params, optimizer, clip):
        # the loop divides the gradients by its 0-d device scale (new gradient tensors)
        scale = full((), 2.0**16, f32, params[0].device)
        return loop_update(params, optimizer, clip, scale=scale)

    return update


def eval_batch_of(record: dict) -> int:
    """The batch size evaluation runs at (the record's ``eval.batch_size``, else 64)."""
    return int((record.get("eval") or {}).get("batch_size", 64))


def plan_run(record: dict, target=None, *, device=None, budget: str | None = None,
             refuse: bool = False, **kwargs) -> Plan:  # fmt: skip
    """The memory plan of ``record``'s training step as the loop runs it, for ``target``
    (or ``device``'s limits under ``budget``); ``refuse``: a red plan raises (with its
    problems and remediations). ``kwargs`` go to ``make_plan`` (mode, batch...)."""
    if target is None:
        target = target_of_device(device, budget)
    kwargs.setdefault("eval_batch", eval_batch_of(record))
    kwargs.setdefault("update", loop_update_for(record))
    return (plan_or_refuse if refuse else make_plan)(record, target, **kwargs)
