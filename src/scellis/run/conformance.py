"""The tier conformance harness (run layer): a record trained a few steps under a tier.

``train_steps`` trains a record from its first step on a device under a determinism
tier and gives back the logged losses, every weight (flattened, by name), the time of
each step and of each validation pass, and the dispatches of a replayed step.
``bench/conformance.py`` runs it over the example records, per tier and device, for
the speed-and-divergence table; the tier tests run it on the reference device and
WebGPU under ``prod`` and ``fast`` and check the outcome against
``train.determinism.within``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..data.record import load_data
from .prepare import prepare_run


@dataclass
class Outcome:
    losses: list[float]
    weights: dict[str, list[float]]
    step_seconds: list[float] = field(default_factory=list)  # each step's wall time
    # each step's CPU time, every thread of the process: on a software adapter (lavapipe)
    # the kernels' own work, which other jobs on a shared machine do not inflate
    step_cpu_seconds: list[float] = field(default_factory=list)
    eval_seconds: list[float] = field(default_factory=list)  # each validation pass's
    val_losses: list[float] = field(default_factory=list)
    dispatches: int | None = None  # per replayed step (None: the steps ran eagerly)

    def compared(self) -> dict[str, list[float]]:
        """The values a tier comparison reads: the losses and every weight."""
        return {"losses": self.losses, **self.weights}


def load_dataset(record: dict, base_dir="."):
    """The record's own data, loaded once so that every run of a comparison reads it."""
    return load_data(record["data"], base_dir=base_dir)


async def train_steps(
    record: dict, device, tier: str, steps: int, *, dataset, eval_every=None, val_rows=None
) -> Outcome:
    """Train ``record`` ``steps`` steps on ``device`` under ``tier`` (see the module
    note); validation every ``eval_every`` steps on the first ``val_rows`` rows."""
    prep = prepare_run({**record, "determinism_tier": tier}, device, dataset=dataset,
                       drop_last=True)  # fmt: skip
    prep.limit_validation(val_rows)
    out = Outcome([], {})
    validate = eval_every is not None
    t, cpu = time.perf_counter(), time.process_time()
    async for ev in prep.fit(max_steps=steps, log_every=1, validate=validate,
                             eval_every=eval_every):  # fmt: skip
        now, cpu_now = time.perf_counter(), time.process_time()
        if ev.kind == "log":
            out.losses.append(ev.loss)
            out.step_seconds.append(now - t)
            out.step_cpu_seconds.append(cpu_now - cpu)
        elif ev.kind == "eval":
            out.val_losses.append(ev.val_loss)
            out.eval_seconds.append(now - t)
        elif ev.kind == "end" and ev.replay:
            out.dispatches = ev.replay["dispatches_per_step"]
        t, cpu = now, cpu_now
    for name, p in prep.model.named_parameters():
        out.weights[name] = [float(v) for v in _flat(await p.read())]
    return out


def _flat(v):
    if isinstance(v, list):
        for x in v:
            yield from _flat(x)
    else:
        yield v
