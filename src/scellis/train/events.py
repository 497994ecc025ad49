"""The events of a run (train layer): one small class per kind, and their JSON schema.

``fit`` yields ``start``, ``warning``, ``log``, ``eval``, ``epoch``, ``early_stop`` and
``end``; the run session (run layer) adds ``plan``, ``progress``, ``checkpoint``,
``sample``, ``stopped``, ``paused``, ``resume`` and ``history``; the CLI's JSON lines
add ``info``, ``error`` and ``resume_hint``. Every producer builds these classes and every consumer
reads them: the CLI prints them, the tab's worker forwards ``to_dict()`` to the page,
and the page reads ``schema()`` (committed as ``web/src/run/events.schema.json``).

An event reads like its JSON form too (``ev["loss"]``, ``ev.get("best")``), so code
that handles the JSON and code that handles the objects read them the same way.
Fields made with ``optional()`` are left out of the JSON while they are None.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

KINDS: dict[str, type[Event]] = {}


def optional(default=None):
    """A field the JSON form leaves out while it is None."""
    return field(default=default, metadata={"optional": True})


def kind(name: str, *, persist: bool = False, doc: str = ""):
    """Register an event class under its ``kind``; ``persist``: the tab writes its
    store back to browser storage after this event (what it records must survive)."""

    def wrap(cls):
        cls = dataclass(cls, eq=False)  # Mapping's equality: equal to the JSON form
        cls.kind, cls.persist = name, persist
        KINDS[name] = cls
        return cls

    return wrap


class Event(Mapping):
    """The base of every event class (see the module note): a read-only mapping of its
    JSON form, so it also compares equal to that dict."""

    kind: ClassVar[str] = ""
    persist: ClassVar[bool] = False

    def to_dict(self) -> dict:
        out = {"kind": self.kind}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = value
        return out

    def __getitem__(self, key: str):
        if key == "kind":
            return self.kind
        f = self.__dataclass_fields__.get(key) if isinstance(key, str) else None
        if f is None or (f.metadata.get("optional") and getattr(self, key) is None):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


# -- fit's events --


@kind("start")
class Start(Event):
    device: str
    tier: dict
    precision: dict
    epochs: int
    steps_per_epoch: int | None
    step: int
    epoch: int
    seed: int
    parameters: int


@kind("warning")
class RunWarning(Event):
    message: str


@kind("log")
class Log(Event):
    """A log point: ``loss`` is the mean over the window's clean steps (None if every
    step was skipped), ``lr`` the rate the last step used, ``throughput`` samples/s."""

    step: int
    epoch: int
    batch: int
    loss: float | None
    lr: float
    throughput: float
    samples: int
    skipped: int
    skipped_total: int
    loss_scale: float
    lr_reduced: bool | None = optional()
    best: float | None = optional()
    bad: int | None = optional()


@kind("eval")
class Eval(Event):
    """A validation pass; ``lr`` is set after reduce_on_plateau was fed. ``metrics``:
    each metric of the record's ``eval.metrics``; ``baselines``: naive forecasts' (or
    the unigram model's) values of the same metrics on the same windows; ``verdict``:
    whether a forecaster beats them, by how much, and what to change when it does not
    (``run.verdict``)."""

    step: int
    epoch: int
    val_loss: float
    metrics: dict | None = optional()  # the record's eval.metrics, in the data's units
    baselines: dict | None = optional()  # {baseline: {metric: value}} on the same windows
    verdict: dict | None = optional()  # {beats, mae_ratio, mase, text} beside the baselines
    lr: float | None = optional()
    lr_reduced: bool | None = optional()
    best: float | None = optional()
    bad: int | None = optional()


@kind("epoch")
class Epoch(Event):
    epoch: int
    step: int


@kind("early_stop")
class EarlyStop(Event):
    step: int
    epoch: int
    reason: str
    best: float | None


@kind("end", persist=True)
class End(Event):
    """The run's summary. ``stopped_by_user``: a stop (or a hand-over) ended it before
    its last step; ``run``: the recorded run's id, when it is recorded."""

    steps: int
    epoch: int
    batch: int
    loss: float | None
    val_loss: float | None
    best: float | None
    stopped_early: bool
    reason: str
    skipped_total: int
    loss_scale: float | None
    lr: float
    readbacks: int
    wall_s: float
    tier: dict
    precision: dict
    replay: dict | None
    stopped_by_user: bool = False
    run: str | None = optional()


# -- the run session's events --


@kind("plan")
class Plan(Event):
    """The memory plan of the step, before the first one runs (``ir.plan.Plan.record``)."""

    verdict: str
    mode: str
    batch: int
    precision: str
    parameters_count: int
    peak: int
    step_peak: int
    eval_peak: int
    schedule_bytes: int
    replay_bytes: int  # resident while steps replay (0: the run does not replay)
    classes: dict
    class_peaks: dict
    largest_buffer: int
    budget: int
    budget_source: str
    headroom: float
    limits: dict
    limits_source: str
    device: str
    problems: list
    warnings: list
    remediations: list
    kernel_problems: list  # problems that are a kernel's, not a matter of memory
    # the frozen base as codes and scales (QLoRA): {format, weights, bytes}; {}: not quantised
    quantized: dict | None = optional()
    # tensors wider than one binding, split into windows by the kernels (not a warning)
    split_tensors: int | None = optional()


@kind("progress")
class Progress(Event):
    total_steps: int
    epochs: int
    run: str | None = optional()


@kind("checkpoint", persist=True)
class Checkpoint(Event):
    """A checkpoint written; ``reason``: every (N steps), epoch, time, stop or end."""

    step: int
    manifest: str
    reason: str
    run: str | None = optional()


@kind("sample")
class Sample(Event):
    """Forecast vs actual (``type`` forecast) or generated text (``type`` text)."""

    type: str
    predicted: list | None = optional()
    actual: list | None = optional()
    starts: list | None = optional()
    greedy: bool | None = optional()
    prompt: str | None = optional()
    generated: str | None = optional()
    rows: list | None = optional()


@kind("stopped")
class Stopped(Event):
    step: int


@kind("paused", persist=True)
class Paused(Event):
    """The run holds after ``step`` (the steps done) until it is resumed or stopped: a
    pause asked during a step takes effect once that step is over."""

    step: int


@kind("resume", persist=True)
class Resume(Event):
    """``run`` continues from ``step``; ``parent`` (RUN@STEP) when ``run`` is a new
    branch of a run resumed from a checkpoint older than its last."""

    run: str
    step: int
    skipped: list
    parent: str | None = optional()


@kind("history")
class History(Event):
    """A resumed run's stored curves, ``{metric: [[step, value], ...]}``."""

    run: str
    metrics: dict


# -- the command line's own lines (``--json``) --


@kind("info")
class Info(Event):
    message: str
    run: str | None = optional()
    store: str | None = optional()
    dataset: str | None = optional()
    device: str | None = optional()
    step: int | None = optional()
    manifest: str | None = optional()
    bitwise: bool | None = optional()
    parent: str | None = optional()


@kind("error")
class Error(Event):
    message: str


@kind("resume_hint")
class ResumeHint(Event):
    command: str


# -- the schema --

_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean",
               dict: "object", list: "array", type(None): "null"}  # fmt: skip


def _json_type(hint) -> list[str] | dict:
    if hint is Any:
        return {}
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    names = []
    for a in args:
        names.append(_JSON_TYPES[a])
        if a is int:  # JSON does not tell 2 from 2.0
            names.append("number")
    return {"type": sorted(set(names))}


def _class_schema(cls) -> dict:
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {"kind": {"const": cls.kind}}
    required = ["kind"]
    for f in dataclasses.fields(cls):
        props[f.name] = _json_type(hints[f.name])
        if not f.metadata.get("optional"):
            required.append(f.name)
    out = {"type": "object", "properties": props, "required": required}
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        out["description"] = " ".join(cls.__doc__.split())
    if cls.persist:
        out["x-persist"] = True
    return out


def schema() -> dict:
    """The JSON schema of every event kind (what the page and the worker read)."""
    defs = {name: _class_schema(cls) for name, cls in sorted(KINDS.items())}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Scellis run events",
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in defs],
        "$defs": defs,
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=1, sort_keys=True) + "\n"
