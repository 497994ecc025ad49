"""The memory plan (ir layer): will this run fit, and if not, what would make it fit.

Before the first step: trace the record's step on the null device, replay its buffer
lifetimes through the target's allocator rounding (``ir.memory``), then check

- the peak (parameters + gradients + optimizer state + saved activations + inputs +
  f16 working copies + working memory, summed where co-resident, and on WebGPU the
  storages the pool keeps free for their size class) against the budget;
  with replay (a training step replayed as a recorded schedule, WebGPU), what the
  schedule keeps resident: every buffer of the recorded step in its own storage, with
  an evaluation forward on top;
- every buffer against ``maxStorageBufferBindingSize`` (a wider one is split into
  binding windows, which the kernels handle: counted and shown, no warning) and
  ``maxStorageBuffersPerShaderStage`` (a tensor or an op needing more bindings than that
  cannot run: refused), by lowering the step's ops with the backend's own kernel
  builders.

Verdict: **green** fits; **yellow** fits with warnings (under 15% headroom); **red**
refused. A red or yellow plan lists remediations with an
estimated saving each, measured by re-tracing where that is possible (half the batch,
mixed f16, the frozen base quantised to NF4 under LoRA adapters) and estimated from
the classes otherwise (checkpointing, LoRA/PEFT). When parameters, gradients and
optimizer state alone exceed the budget, the model is too large for one device: the
plan says so and names PyTorch's FSDP through ``scellis export REC --to torch-train
DIR`` and ``torchrun`` as a way out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base.dtypes import f32
from ..base.errors import DTypeError, LimitError, ScellisError
from ..base.shapes import numel as count_of
from ..catalog.peft.quant import QUANT_PARAMS
from ..devices.webgpu.backend import binding_geometry, size_class, storage_bytes
from ..runtime.replay_draws import is_random
from .graph import op_graph
from .kernels import lower
from .limits import Target, human
from .memory import CLASSES, Pool, cost_fn, profile, scratch_bytes
from .remedies import HEADROOM_WARN, TOO_LARGE, Remediation, apply_edits
from .remedies import remediations as remediations_of
from .schedule import schedule
from .trace import Trace, trace

PERSISTENT = ("parameters", "gradients", "optimizer_state", "loop_state")
# the train loop's device-side scalars: 3 accumulators, the loss scale and its clean-step
# count, the finite flag, and the accumulators' next values while they are replaced
LOOP_SCALARS = 8


class PlanRefused(ScellisError):
    """A run the memory planner calls red: it would not fit, so it never starts."""

    def __init__(self, plan: Plan):
        self.plan = plan
        # one fix a line under the refusal: each names the edit that applies it
        fixes = "".join(f"\n  to fit: {_refusal_fix(r)}" for r in _told(plan.remediations))
        if plan.memory_fits:  # it would fit: what refuses it is a kernel, not memory
            super().__init__(
                f"the run does not start: {'; '.join(plan.problems)} (memory is not the "
                "problem: the step fits; change what the kernel is asked, e.g. precision: f32)"
            )
            return
        super().__init__(
            f"the memory plan is red, so the run does not start: {'; '.join(plan.problems)}" + fixes
        )


def _told(fixes: list[Remediation]) -> list[Remediation]:
    """What a refusal names: the fixes that clear the plan and the advice, else the three
    that save most (one line of error must stay readable)."""
    clear = [r for r in fixes if r.verdict in ("green", "yellow") or r.verdict is None]
    return clear or sorted(fixes, key=lambda r: -r.saving)[:3]


def _refusal_fix(r: Remediation) -> str:
    if not r.applicable:
        return f"{r.fix} (saves ~{human(r.saving)})"
    return f"{r.fix}: {r.how()} (saves ~{human(r.saving)}, then {r.verdict})"


@dataclass
class Plan:
    verdict: str
    mode: str
    batch: int
    precision: str
    peak: int
    classes: dict[str, int]
    class_peaks: dict[str, int]
    target: Target
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    remediations: list[Remediation] = field(default_factory=list)
    largest: int = 0
    n_params: int = 0
    step_peak: int = 0
    eval_peak: int = 0  # 0: not planned
    schedule_bytes: int = 0  # the step's buffers packed into slots by liveness
    replay_bytes: int = 0  # what a replayed step keeps resident (0: the run does not replay)
    # problems that are no matter of memory: a kernel this device cannot run as asked
    kernel_problems: list[str] = field(default_factory=list)
    # the frozen base stored as codes and scales (QLoRA): {format, weights, bytes}; {} if not
    quantized: dict = field(default_factory=dict)
    # tensors wider than one binding: split into windows by the kernels, so no warning
    split_tensors: int = 0

    @property
    def memory_fits(self) -> bool:
        """True when every problem is a kernel's, none a matter of memory or limits."""
        return set(self.problems) <= set(self.kernel_problems)

    @property
    def headroom(self) -> float:
        return (self.target.budget - self.peak) / self.target.budget

    def record(self) -> dict:
        return {
            "verdict": self.verdict,
            "mode": self.mode,
            "batch": self.batch,
            "precision": self.precision,
            "parameters_count": self.n_params,
            "peak": self.peak,
            "step_peak": self.step_peak,
            "eval_peak": self.eval_peak,
            "schedule_bytes": self.schedule_bytes,
            "replay_bytes": self.replay_bytes,
            "classes": self.classes,
            "class_peaks": self.class_peaks,
            "largest_buffer": self.largest,
            "budget": self.target.budget,
            "budget_source": self.target.budget_source,
            "headroom": round(self.headroom, 4),
            "limits": self.target.limits,
            "limits_source": self.target.limits_source,
            "device": self.target.device,
            "problems": self.problems,
            "warnings": self.warnings,
            "remediations": [r.record() for r in self.remediations],
            "kernel_problems": self.kernel_problems,
            "quantized": self.quantized,
            "split_tensors": self.split_tensors,
        }

    def _title(self) -> str:
        if self.verdict == "red" and self.memory_fits:
            return "plan: REFUSED, not for memory (a kernel cannot run as asked)"
        return f"memory plan: {self.verdict.upper()}"

    def text(self) -> str:
        t = self.target
        lines = [
            f"{self._title()}  ({self.mode}, batch {self.batch}, "
            f"precision {self.precision}, {self.n_params} parameters)",
            f"  peak       {human(self.peak):>12}  of budget {human(t.budget)} ("
            + (
                f"{self.headroom:.0%} headroom)"
                if self.peak <= t.budget
                else f"over by {human(self.peak - t.budget)})"
            ),
            f"  budget     from {t.budget_source}",
            f"  limits     from {t.limits_source}",
        ]
        if self.eval_peak:
            lines.append(
                f"  step peak  {human(self.step_peak):>12}; evaluation forward "
                f"{human(self.eval_peak)} (with what a step leaves resident)"
            )
        if self.replay_bytes:
            lines.append(
                f"  replay     {human(self.replay_bytes):>12}  resident while steps replay "
                "(every buffer of the recorded step kept; --no-replay runs eagerly)"
            )
        if self.quantized:
            q = self.quantized
            lines.append(
                f"  quantised  {human(q['bytes']):>12}  the frozen base: {q['weights']} dense "
                f"weights as {q['format']} codes and scales (counted in parameters)"
            )
        if self.schedule_bytes:
            lines.append(
                f"  schedule   {human(self.schedule_bytes):>12}  (the step's buffers packed "
                "by liveness)"
            )
        lines.append("  at the step's peak (co-resident):")
        for c in CLASSES:
            if self.classes.get(c):
                lines.append(f"    {c:<20} {human(self.classes[c]):>12}")
        if t.limits:
            lines.append(
                f"  largest buffer {human(self.largest)}; maxStorageBufferBindingSize "
                f"{human(t.limits['max_storage_buffer_binding_size'])}, maxBufferSize "
                f"{human(t.limits['max_buffer_size'])}"
                + (
                    f"; {self.split_tensors} tensor(s) split into binding windows"
                    if self.split_tensors
                    else ""
                )
            )
        lines += [f"  refused: {p}" for p in self.problems]
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.remediations:
            lines.append("  remediations (estimated saving):")
            for r in self.remediations:
                how = f" Apply: {r.how()}" if r.how() else ""
                lines.append(f"    - {r.fix}: ~{human(r.saving)}. {r.detail}.{how}")
        return "\n".join(lines) + "\n"


def _binding_checks(tr: Trace, target: Target) -> tuple[list, int, int, int, list]:
    """Problems, the tensors split into binding windows, the largest buffer, the bytes the
    step's schedule packs its buffers into (0 when it was not lowered), and the problems
    that are kernels'."""
    problems, largest, kernels = [], 0, []
    allocs = tr.allocs()
    for numel, dtype, _, _ in allocs.values():
        largest = max(largest, storage_bytes(numel, dtype))
    if not target.limits:
        return problems, 0, largest, 0, kernels
    lim = target.limits
    window, _ = binding_geometry(lim)
    per_stage = lim["max_storage_buffers_per_shader_stage"]
    split = 0
    for numel, dtype, _, scope in allocs.values():
        nbytes = storage_bytes(numel, dtype)
        windows = -(-size_class(nbytes) // window)
        where = f" in block {scope!r}" if scope else ""
        if windows + 1 > per_stage:
            problems.append(
                f"a tensor of {human(nbytes)}{where} needs {windows} bindings of "
                f"maxStorageBufferBindingSize={human(lim['max_storage_buffer_binding_size'])}, "
                f"over maxStorageBuffersPerShaderStage={per_stage}"
            )
        elif nbytes > lim["max_storage_buffer_binding_size"]:
            split += 1
    packed = 0
    if not problems:
        try:
            kg = lower(op_graph(tr), target)
            problems += kg.verify()
            packed = schedule(kg).bytes
        except LimitError as e:  # an op needing more of the device than it has
            problems.append(str(e))
        except DTypeError as e:  # a kernel that does not run in this dtype here
            problems.append(str(e))
            kernels.append(str(e))
    return problems, split, largest, packed, kernels


def _runnable_precision(record: dict, precision: str | None, target: Target):
    """The precision the run will really use on ``target`` (the train layer's rule: mixed
    f16 without shader-f16 runs f32 when the record allows the fallback, else is refused),
    a warning, and a refusal."""
    spec = record.get("precision") if precision is None else precision
    policy = spec.get("policy", "f32") if isinstance(spec, dict) else (spec or "f32")
    if policy != "mixed_f16" or target.has_f16 or target.device != "webgpu":
        return policy, "", ""
    if isinstance(spec, dict) and spec.get("fallback") == "f32":
        return "f32", "no shader-f16 here: planned in f32, as the record's fallback asks", ""
    return policy, "", "precision mixed_f16 needs shader-f16, which this target lacks"


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def make_plan(
    record: dict,
    target: Target,
    *,
    mode: str = "training",
    batch: int | None = None,
    precision: str | None = None,
    remediate: bool = True,
    update=None,
    loop_scalars: int = LOOP_SCALARS,
    eval_batch: int | None = None,
    replay: bool = False,
) -> Plan:
    """``update``: the optimizer phase to trace (see ``trace.run_training``);
    ``loop_scalars``: 0-d f32 tensors the train loop keeps on the device (loss sums,
    step counts, the loss scale), counted as co-resident throughout; ``replay``: the
    training steps replay where the target can (WebGPU), so its residency counts."""
    dev = target.device
    precision, f16_note, f16_problem = _runnable_precision(record, precision, target)
    tr = trace(record, mode=mode, batch=batch, precision=precision, update=update, device=dev)
    prof = profile(tr, target.device, loop_scalars if mode == "training" else 0)
    eval_peak = 0
    kept = sum(prof.at_end[c] for c in PERSISTENT)
    ev_tr = None
    if mode == "training" and eval_batch:
        # evaluation runs between steps, on the model already built (the training
        # model's ``kept`` stands for its parameters): its forward shares the device with
        # everything a step leaves behind, and draws on the storages left in the pool
        ev_tr = trace(record, mode="inference", batch=eval_batch, precision=precision, device=dev,
                      with_loss=True)  # fmt: skip
        eval_peak = profile(ev_tr, dev, pool=prof.pool.copy(), built=True).peak + kept
    problems, split, largest, packed, kernels = _binding_checks(tr, target)
    problems = _dedupe(problems)[:5]
    peak = max(prof.peak, eval_peak)
    resident = 0
    steady = None
    if replay and mode == "training" and dev == "webgpu":
        steady = _steady_trace(tr, record, batch=batch, precision=precision, update=update)
    if steady is not None:
        resident, pool = replay_resident(steady, dev, loop_scalars)
        peak = max(peak, resident)
        if ev_tr is not None:
            # an evaluation forward runs beside the schedule's buffers, drawing on the
            # pool's free storages (counted in ``resident``)
            extra = profile(ev_tr, dev, pool=pool.copy(), built=True).peak - pool.bytes
            peak = max(peak, resident + extra)
    if peak > target.budget:
        problems.insert(
            0,
            f"peak {human(peak)} exceeds the budget {human(target.budget)} "
            f"({target.budget_source})",
        )
    plan = Plan(
        "green",
        mode,
        tr.batch,
        tr.precision,
        peak,
        prof.at_peak,
        prof.class_peaks,
        target,
        problems,
        [],
        largest=largest,
        n_params=tr.n_params,
        step_peak=prof.peak,
        eval_peak=eval_peak,
        schedule_bytes=packed,
        replay_bytes=resident,
    )
    plan.kernel_problems = kernels
    plan.split_tensors = split
    plan.quantized = quantized_base(record, tr)
    fixed = sum(prof.at_peak.get(c, 0) for c in ("parameters", "gradients", "optimizer_state"))
    if mode == "training" and fixed > target.budget:
        plan.problems.insert(
            1,
            f"{TOO_LARGE}: parameters, gradients and optimizer state alone take "
            f"{human(fixed)}, over the budget",
        )
    if f16_problem:
        plan.problems.append(f16_problem)
        plan.kernel_problems.append(f16_problem)
    if f16_note:
        plan.warnings.append(f16_note)
    if 0 <= plan.headroom < HEADROOM_WARN:
        plan.warnings.append(f"only {plan.headroom:.0%} headroom under the budget")
    plan.verdict = "red" if plan.problems else "yellow" if plan.warnings else "green"
    if remediate and plan.verdict != "green":
        kw = dict(mode=mode, batch=batch, precision=precision, update=update,
                  loop_scalars=loop_scalars, eval_batch=eval_batch, replay=replay)  # fmt: skip
        plan.remediations = remediations_of(record, plan, replanner(record, target, kw))
    return plan


def replanner(record: dict, target: Target, kwargs: dict):
    """``(edits, options) -> Plan``: ``make_plan`` of ``record`` with the edits applied
    and the run options replaced; an edited batch size, evaluation batch or precision
    takes the place of the one ``kwargs`` fixed."""

    def replan(edits: dict, options: dict) -> Plan:
        kw = {**kwargs, **options, "remediate": False}
        if not kw.pop("validate", True):  # no validation pass: no evaluation forward
            kw["eval_batch"] = None
        if "batch_size" in edits:
            kw["batch"] = None
        if "eval.batch_size" in edits and kw.get("eval_batch"):
            kw["eval_batch"] = edits["eval.batch_size"]
        if any(path.split(".")[0] == "precision" for path in edits):
            kw["precision"] = None
        return make_plan(apply_edits(record, edits), target, **kw)

    return replan


def quantized_base(record: dict, tr: Trace) -> dict:
    """{format, weights, bytes} of the frozen weights the trace holds as codes and scales
    (``finetune: quantize_base``), or {} when none is."""
    spec = (record.get("finetune") or {}).get("quantize_base")
    names = [n for n in tr.param_specs if n.rpartition(".")[2] in QUANT_PARAMS]
    if spec is None or not names:
        return {}
    size = sum(count_of(shape) * dt.itemsize for shape, dt in map(tr.param_specs.get, names))
    fmt = spec.get("format", "nf4") if isinstance(spec, dict) else spec
    weights = sum(n.endswith(".weight_codes") for n in names)
    return {"format": fmt, "weights": weights, "bytes": size}


def _steady_trace(tr: Trace, record: dict, **kw) -> Trace | None:
    """A trace whose last steps repeat, as a replayed run's do, or None when the steps
    never settle. The first step may make what later ones find cached (rotary position
    tables, say), so when the two traced steps differ, a third is traced and the last two
    compared (a run records its steps after eager ones, so its replay sees the settled
    step)."""
    if steps_repeat(tr):
        return tr
    longer = trace(record, mode="training", device="webgpu", steps=3, **kw)
    return longer if steps_repeat(longer, skip=1) else None


def steps_repeat(tr: Trace, skip: int = 0) -> bool:
    """Whether the traced steps (after the first ``skip``) repeat op for op in their
    forward, loss and backward with the same attributes, as a step must to replay. The
    update is left out (the replay patches the optimizer's per-step values), and so are
    a random op's Philox counter (the replay re-encodes it: runtime.replay_draws) and
    constants (the first step makes the ones later steps find cached)."""
    steps: dict[str, list] = {}
    at = None
    for e in tr.events:
        if e[0] == "mark":
            at = e[1] if e[1].startswith("step ") else None
        elif e[0] == "run" and at is not None and e[5] != "optimizer" and e[1] != "full":
            attrs = e[4]
            if is_random(e[1]):
                attrs = {k: v for k, v in attrs.items() if k not in ("key", "draw", "step")}
            steps.setdefault(at, []).append((e[1], attrs))
    runs = list(steps.values())[skip:]
    return all(r == runs[0] for r in runs[1:])


def replay_resident(tr: Trace, device: str, loop_scalars: int) -> tuple[int, Pool]:
    """The device memory replayed steps hold, at its peak: the recorded step keeps the
    storages it allocates (reusing its own released ones by size class, as it ran
    eagerly) beside everything that lives through it, so the traced steady step is
    replayed through such a private pool. Beside it, the inputs twice more (the copies
    the two recorded steps ran on, the second recorded step's batch) and the loop's
    scalars twice (the pinned ones the schedule reads, and an eager step's new ones
    before they are copied back). The f32 weights a quantised base replaced are not
    counted: they were let go before the first step."""
    cost = cost_fn(device)
    replaced = _quantised_away(tr)
    allocs = tr.allocs()
    steps = [e[1] for e in tr.events if e[0] == "mark" and e[1].startswith("step ")]
    last = steps[-1] if steps else None
    live = peak = inputs = 0
    counted: dict[int, tuple[int, bool]] = {}  # serial -> (bytes, made in the last step)
    own = Pool()  # the last step's storages no buffer holds: the schedule's, kept
    pool = Pool()  # the device pool's free storages, which a recorded step draws on
    in_step = False
    for e in tr.events:
        if e[0] == "mark":
            in_step = e[1] == last
        elif e[0] == "alloc" and e[1] not in replaced:
            nbytes = cost(e[2], e[3])
            if not (in_step and own.take(nbytes)):
                pool.take(nbytes)
                live += nbytes
            counted[e[1]] = (nbytes, in_step)
            if in_step and allocs[e[1]][2] == "input":
                inputs += nbytes
        elif e[0] == "release" and e[1] in counted:
            nbytes, mine = counted.pop(e[1])
            (own if mine else pool).give(nbytes)
            if not mine:
                live -= nbytes
        elif e[0] == "empty_pool":
            pool.clear()
        if in_step:
            # the pool's free storages are held beside the schedule's
            peak = max(peak, live + pool.bytes)
    extra = scratch_bytes(tr, device) + 2 * inputs + 2 * loop_scalars * cost(1, f32)
    return peak + extra, pool


def _quantised_away(tr: Trace) -> set[int]:
    """Buffers the model's construction made and released unread: a QLoRA base's f32
    weights, replaced by codes and scales (on the recording device the codes are made
    as shapes, so nothing reads the weights they stand for)."""
    allocs = tr.allocs()
    read = {v.serial for e in tr.events if e[0] == "run" for v in e[2]}
    return {
        e[1]
        for e in tr.events
        if e[0] == "release" and e[1] not in read and allocs[e[1]][2] == "params"
    }


def plan_or_refuse(record: dict, target: Target, **kwargs) -> Plan:
    """The plan, or ``PlanRefused`` (a ScellisError naming the fixes) when it is red.

    Called before anything is allocated on the real device (it traces on the null
    device), so a refused run allocates nothing."""
    plan = make_plan(record, target, **kwargs)
    if plan.verdict == "red":
        raise PlanRefused(plan)
    return plan
