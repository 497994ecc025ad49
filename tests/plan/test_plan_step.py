"""The planner traces the step the train loop runs: the same dispatches, in the same order.

Oracle: the train loop's own step (``_Run.eager_step``, the one ``fit`` runs) driven on
the recording null device, against the memory planner's trace of the record with the
loop's update (``train.step.loop_update_for``). The loop's host-side loss
accumulation (a sum per step, outside the step) is left out of the comparison.
Under f32 the two must agree op for op; loss scaling is not traced (trace.py says so).
"""

from __future__ import annotations

import pytest
from planutil import lstm, transformer

from scellis.base.dtypes import as_dtype
from scellis.base.rng import Generator
from scellis.base.shapes import contiguous_strides, numel
from scellis.devices.null import TracingBackend
from scellis.ir.record import concrete_inputs
from scellis.ir.trace import trace
from scellis.model.build import RecordModel, entry_object
from scellis.runtime.tensor import Tensor
from scellis.train import TrainState
from scellis.train.fit_config import FitConfig
from scellis.train.loop import _Run
from scellis.train.step import loop_update_for

STEPS = 2


def _ops(events) -> list[tuple]:
    return [(e[1], tuple(sorted(e[4].items(), key=str))) for e in events if e[0] == "run"]


def _tensor(dev, shape, dtype) -> Tensor:
    return Tensor(dev.alloc(numel(shape), dtype), shape, contiguous_strides(shape), 0, dtype, dev)


def _planned(record) -> tuple[list[tuple], tuple]:
    tr = trace(record, steps=STEPS, update=loop_update_for(record))
    start = tr.events.index(("mark", "step 0"))
    end = tr.events.index(("mark", "end"))
    return _ops(tr.events[start:end]), tr.output_views[0][0]


def _looped(record, pred_shape, monkeypatch) -> list[tuple]:
    dev = TracingBackend(name="webgpu")
    seed = int(record.get("seed", 0))
    model = RecordModel(record, device=dev, gen=Generator(seed, "init"))
    optimizer = entry_object(record["optimizer"], "optimizer", model)
    loss = entry_object(record["loss"], "loss")
    ts = TrainState(model, optimizer, None, seed=seed)
    config = FitConfig(
        epochs=1, determinism_tier="prod", grad_clip=record.get("grad_clip"),
        precision=record.get("precision"), replay=False,
    )  # fmt: skip
    run = _Run(ts, loss, None, config)
    monkeypatch.setattr(run, "_accumulate", lambda value, ok: None)
    (shape, dtype), = concrete_inputs(record, record["batch_size"]).values()  # fmt: skip
    if record["loss"]["block_id"].endswith("cross_entropy"):
        target = (pred_shape[:-1], "i32")
    else:
        target = (pred_shape, "f32")
    model.train()
    start = len(dev.events)
    for _ in range(STEPS):
        x = _tensor(dev, shape, dtype)
        y = _tensor(dev, target[0], as_dtype(target[1]))
        run.eager_step(x, y)
    return _ops(dev.events[start:])


RECORDS = [
    ("lstm-h16-b4", lambda: lstm(16, 4)),
    ("transformer-d32-l1-b2-clipped", lambda: transformer(32, 1, 2)),
]


@pytest.mark.parametrize("name,make", RECORDS, ids=[n for n, _ in RECORDS])
def test_the_planner_traces_the_loops_step(name, make, monkeypatch):
    record = make()
    planned, pred_shape = _planned(record)
    looped = _looped(record, pred_shape, monkeypatch)
    assert len(planned) > 20  # a real step: forward, backward, the guard, the update
    assert looped == planned
