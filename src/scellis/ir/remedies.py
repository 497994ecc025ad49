"""Remediations of a red or yellow memory plan (ir layer): typed fixes, each re-planned.

A remediation is a kind, the edit that applies it and what the planner says once it is
applied. The edit is ``set`` (dotted record paths and their values, as ``scellis train
--set PATH=VALUE`` takes them) and ``option`` (run options, such as ``replay: false``
for ``--no-replay``). Every edit is planned by the caller's ``replan``, which plans the
way the run would (its evaluation batch, its optimizer phase, replayed steps falling
back to eager ones), so the verdict a fix carries is the verdict applying it gives and
its saving is the difference of two planned peaks, not an extrapolation. The largest
batch that fits is searched with the planner (bisection over batch sizes), so it
counts everything the planner counts: replayed steps' residency, the evaluation
forward beside the step, binding limits. When no single fix clears a red plan, the
fixes are combined, largest saving first, until one set of edits does.

Advice no record edit can express (narrower layers, several devices through
``torchrun``) has no edit and no verdict; its saving is an estimate and says so.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from ..base.errors import ScellisError
from .limits import human

if TYPE_CHECKING:
    from .plan import Plan

TOO_LARGE = "too large for one device"
HEADROOM_WARN = 0.15
QUANTIZE_FIX = "quantise the base (nf4)"
LORA = {"block_id": "peft/lora", "target_modules": "*", "rank": 8}
RANK = {"red": 0, "yellow": 1, "green": 2}

# (edits, options) -> the plan of the record with them applied, made as the run makes it
Replan = Callable[[dict, dict], "Plan"]


@dataclass
class Remediation:
    """One fix of a plan: what it is, the edit that applies it, what it gives."""

    kind: str  # batch_size | eager_steps | no_validation | activation_checkpointing |
    #            precision | peft | quantize_base | combined | narrower_layers | sharded
    fix: str  # in a few words, for a line of text or a button
    saving: int  # bytes off the plan's peak: planned, or (advice) an estimate
    detail: str
    set: dict = field(default_factory=dict)  # dotted record path -> value
    option: dict = field(default_factory=dict)  # run option -> value
    verdict: str | None = None  # the verdict with the edit applied; None: advice only
    peak: int | None = None  # the planned peak with the edit applied

    @property
    def applicable(self) -> bool:
        return self.verdict is not None

    def set_args(self) -> list[str]:
        """The ``--set`` arguments that apply ``set`` (values as flow YAML)."""
        return [f"{path}={_flow(value)}" for path, value in self.set.items()]

    def how(self) -> str:
        """How to apply it on the command line."""
        opts = [f"--{k.replace('_', '-')}" if v is True else f"--no-{k.replace('_', '-')}"
                for k, v in self.option.items() if isinstance(v, bool)]  # fmt: skip
        return " ".join([*(f"--set '{a}'" for a in self.set_args()), *opts])

    def record(self) -> dict:
        return asdict(self)


def _flow(value) -> str:
    """``value`` as flow YAML: a plain name bare, anything else as JSON (which YAML reads)."""
    if isinstance(value, str) and _BARE.match(value) and value.lower() not in _WORDS:
        return value
    return json.dumps(value)


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_/-]*$")
_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "none"}


def apply_edits(record: dict, edits: dict) -> dict:
    """A copy of ``record`` with each dotted path set (missing mappings made), as
    ``--set`` edits the record's text."""
    out = copy.deepcopy(record)
    for path, value in edits.items():
        keys = path.split(".")
        node = out
        for key in keys[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[keys[-1]] = copy.deepcopy(value)
    return out


def remediations(record: dict, plan: Plan, replan: Replan) -> list[Remediation]:
    """The fixes of ``plan`` (red or yellow), each planned through ``replan``; the ones
    that clear it first."""
    out = []
    bind = plan.target.limits.get("max_storage_buffer_binding_size", 0)
    if bind and plan.largest > bind:
        out.append(_narrower(plan, bind))
    memory = plan.peak > plan.target.budget * (1 - HEADROOM_WARN)
    if not memory and plan.verdict != "red":
        return out
    if plan.verdict == "red" and plan.memory_fits:
        return out  # a kernel refuses it, which no memory fix changes
    tried = [_planned(plan, replan, *c) for c in _candidates(record, plan)]
    tried = [r for r in tried if r is not None]
    batch = _batch(record, plan, replan)
    if batch is not None:
        tried.insert(1 if tried and tried[0].kind == "eager_steps" else 0, batch)
    out += [r for r in tried if r.saving > 0 or RANK[r.verdict] > RANK[plan.verdict]
            or r.kind == "peft"]  # fmt: skip
    if plan.verdict == "red" and not any(r.verdict in ("green", "yellow") for r in out):
        both = _combined(record, plan, replan, [r for r in tried if r.saving > 0])
        if both is not None:
            out.insert(0, both)
    fixed = _fixed(plan)
    if plan.mode == "training" and fixed > plan.target.budget:
        if not any(r.kind in ("peft", "quantize_base") for r in out):
            out.append(_peft_estimate(plan))
        for r in out:
            if r.kind == "peft":
                r.detail = (f"parameters, gradients and optimizer state alone take "
                            f"{human(fixed)}, over the budget: no batch size can help. "
                            + r.detail)  # fmt: skip
        out.sort(key=lambda r: r.kind not in ("peft", "quantize_base"))
        out.insert(1, sharded(plan, fixed))
    out.sort(key=lambda r: -RANK.get(r.verdict or "red", 0))  # stable: what fits first
    return out


def _fixed(plan: Plan) -> int:
    c = plan.classes
    return c.get("parameters", 0) + c.get("gradients", 0) + c.get("optimizer_state", 0)


def _candidates(record: dict, plan: Plan) -> list[tuple]:
    """(kind, fix, edits, options, what it is) of each single fix this record can take."""
    out = []
    if plan.replay_bytes:
        out.append(
            (
                "eager_steps",
                "eager steps (--no-replay)",
                {},
                {"replay": False},
                "every step runs eagerly, reusing its buffers (slower on the host)",
            )
        )
    training = plan.mode == "training"
    if training and plan.eval_peak > plan.step_peak:
        # the validation forward (at its own batch) is what sets the peak
        out.append(("no_validation", "no validation pass (--no-validate)", {},
                    {"validate": False}, "the run trains without evaluating on the "
                    "validation split"))  # fmt: skip
    if training and plan.classes.get("activations") and not record.get("activation_checkpointing"):
        out.append(("activation_checkpointing",
                    "activation checkpointing (activation_checkpointing: true)",
                    {"activation_checkpointing": True}, {},
                    "recomputing blocks in backward"))  # fmt: skip
    if plan.precision == "f32":
        path = "precision.policy" if isinstance(record.get("precision"), dict) else "precision"
        out.append(("precision", "precision: mixed_f16", {path: "mixed_f16"}, {},
                    "f16 activations with f32 master weights"))  # fmt: skip
    section = record.get("finetune") or {}
    if training and not section:
        out.append(("peft", "LoRA/PEFT", {"finetune.adapters": [dict(LORA)]}, {},
                    "LoRA rank 8 on every dense block, pre-trained weights frozen"))  # fmt: skip
    if training and section.get("quantize_base") is None:
        edits = {"finetune.quantize_base": "nf4"}
        how = "under the record's adapters"
        if not section.get("adapters"):
            edits = {"finetune.adapters": [dict(LORA)], **edits}
            how = "under LoRA rank 8 on every dense block"
        out.append(("quantize_base", QUANTIZE_FIX, edits, {},
                    "frozen dense weights as NF4 codes and per-64 scales (about 0.56 bytes "
                    f"a weight instead of 4) {how}"))  # fmt: skip
    return out


def _planned(plan: Plan, replan: Replan, kind, fix, edits, options, what) -> Remediation | None:
    """The candidate planned; None when it cannot apply here (no dense block to adapt,
    a kernel this device cannot run in f16)."""
    try:
        p = replan(edits, options)
    except ScellisError:
        return None
    if p.kernel_problems and not plan.kernel_problems:
        return None
    detail = f"{what}: peak {human(p.peak)}, {p.verdict} (planned)"
    if p.peak >= plan.peak:
        detail += "; no saving for this model"
    return Remediation(kind, fix, max(0, plan.peak - p.peak), detail, edits, options,
                       p.verdict, p.peak)  # fmt: skip


def _with_batch(n: int, eval_too: bool, eval_batch: int) -> dict:
    edits = {"batch_size": n}
    if eval_too and eval_batch > n:
        edits["eval.batch_size"] = n
    return edits


def _batch(record: dict, plan: Plan, replan: Replan, base: dict | None = None,
           options: dict | None = None) -> Remediation | None:  # fmt: skip
    """The largest batch size the planner gives a better verdict than ``plan``'s (red to
    yellow or green, yellow to green; bisection: each size tried is planned, none is
    extrapolated); when the evaluation forward is what does not fit, the
    evaluation batch shrinks with it. None when the batch is 1 already."""
    base, options = base or {}, options or {}
    if plan.batch <= 1:
        return None
    eval_batch = int((record.get("eval") or {}).get("batch_size", 64))
    smallest = None  # (plan, edits) of the smallest size tried, when none fits
    for eval_too in (False, True):
        if eval_too and eval_batch <= 1:
            break
        lo, hi, best = 0, plan.batch, None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            edits = _with_batch(mid, eval_too, eval_batch)
            try:
                p = replan({**base, **edits}, options)
            except ScellisError:
                hi = mid
                continue
            if RANK[p.verdict] > RANK[plan.verdict]:  # red to yellow or green, yellow to green
                lo, best = mid, (p, edits)
            else:
                hi, smallest = mid, (p, edits)
        if best is not None:
            return _batch_fix(plan, lo, *best, base, options)
    if smallest is None or base:
        return None
    return _batch_fix(plan, smallest[0].batch, *smallest, base, options, fits=False)


def _batch_fix(plan, n, p, edits, base, options, fits=True) -> Remediation:
    detail = f"batch {n} peaks at {human(p.peak)}, {p.verdict} (planned)"
    detail += (f"; the largest batch that fits is {n}" if fits
               else "; no batch size fits alone")  # fmt: skip
    if "eval.batch_size" in edits:
        detail += f", with evaluation at batch {n} too"
    return Remediation("batch_size", f"smaller batch ({n})", max(0, plan.peak - p.peak), detail,
                       {**base, **edits}, dict(options), p.verdict, p.peak)  # fmt: skip


def _combined(record: dict, plan: Plan, replan: Replan, helped: list) -> Remediation | None:
    """Fixes applied together, largest saving first, each kept only if it lowers the
    peak, then the largest batch that fits on top; where that stays red, every fix
    together, then the batch (a fix may lower only the floor that a smaller batch
    comes down to, as quantising the base does, and not the full batch's peak); None
    when both stay red."""
    for only_lowering in (True, False):
        found = _together(record, plan, replan, helped, only_lowering)
        if found is not None:
            return found
    return None


def _together(record: dict, plan: Plan, replan: Replan, helped: list,
              only_lowering: bool) -> Remediation | None:  # fmt: skip
    edits, options, peak, last, kinds = {}, {}, plan.peak, None, []
    for r in sorted((r for r in helped if r.kind != "batch_size"), key=lambda r: -r.saving):
        try:
            p = replan({**edits, **r.set}, {**options, **r.option})
        except ScellisError:
            continue
        if (p.peak < peak or not only_lowering) and not p.kernel_problems:
            edits, options, peak, last = {**edits, **r.set}, {**options, **r.option}, p.peak, p
            kinds.append(r.fix)
            if p.verdict != "red":
                break
    if last is not None and last.verdict == "red":
        b = _batch(record, last, replan, edits, options)
        if b is None or b.verdict == "red":
            return None
        edits, peak, verdict = b.set, b.peak, b.verdict
        kinds.append(b.fix)
    elif last is not None:
        peak, verdict = last.peak, last.verdict
    else:
        return None
    return Remediation("combined", " + ".join(kinds), max(0, plan.peak - peak),
                       f"no single fix clears the plan; together they peak at "
                       f"{human(peak)}, {verdict} (planned)",
                       edits, options, verdict, peak)  # fmt: skip


def _peft_estimate(plan: Plan) -> Remediation:
    """PEFT as advice where no adapter could be planned (no dense block to adapt)."""
    c = plan.classes
    state = c.get("gradients", 0) + c.get("optimizer_state", 0)
    return Remediation(
        "peft",
        "LoRA/PEFT",
        int(state * 0.98),
        "PEFT trains small adapters: the frozen weights need no gradients or optimizer "
        f"state ({human(state)} at the peak; estimate: nearly all of it)",
    )


def _narrower(plan: Plan, bind: int) -> Remediation:
    return Remediation(
        "narrower_layers",
        "narrower layers (every tensor within maxStorageBufferBindingSize)",
        plan.largest - bind,
        f"the largest tensor is {human(plan.largest)}, {human(plan.largest - bind)} over the "
        f"{human(bind)} binding size (the saving is in the largest tensor's bytes); a tensor "
        "within it binds as one window. mixed_f16 halves activations and working copies, "
        "not the f32 master weights",
    )


def devices_needed(peak: int, budget: int) -> int:
    """Devices whose shares of ``peak`` (sharded state, split batches) fit ``budget``."""
    room = max(1, int(budget * (1 - HEADROOM_WARN)))
    return max(2, -(-peak // room))


def sharded(plan: Plan, fixed: int) -> Remediation:
    """The way out when no single device holds the model: PyTorch's FSDP over N devices."""
    n = devices_needed(plan.peak, plan.target.budget)
    return Remediation(
        "sharded",
        f"{TOO_LARGE}: scellis export REC --to torch-train DIR, then torchrun "
        f"--nproc_per_node {n} DIR/train.py --fsdp",
        plan.peak - plan.peak // n,
        f"FSDP over {n} devices shards the parameters, gradients and optimizer "
        f"state ({human(fixed)}, about {human(fixed // n)} each) and splits every batch; "
        "train.py keeps the record's data order, optimizer, schedule and loss, and its "
        "checkpoints come back with scellis import (estimate)",
    )
