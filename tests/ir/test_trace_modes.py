"""The two traced programs: one inference forward, and training steps (ir/trace.py)."""

from __future__ import annotations

import pytest
from irutil import example

from scellis.base.errors import ScellisError
from scellis.devices.null import TracingBackend
from scellis.ir.trace import run_inference, run_training, trace


def _run_phases(events) -> set[str]:
    return {e[5] for e in events if e[0] == "run"}


def test_inference_runs_the_forward_only_and_training_runs_every_phase():
    record = example("tcn_forecaster")
    inf = trace(record, mode="inference", batch=2)
    assert _run_phases(inf.events) <= {"params", "input", "forward"}
    assert "forward" in _run_phases(inf.events) and inf.optimizer == "" and not inf.grads
    tr = trace(record, mode="training", batch=2, steps=2)
    assert {"forward", "loss", "backward", "optimizer"} <= _run_phases(tr.events)
    assert tr.optimizer == record["optimizer"]["block_id"] and tr.grads and tr.state
    marks = [e[1] for e in tr.events if e[0] == "mark"]
    assert marks == ["step 0", "step 1", "end"]
    # the same model either way: one parameter tree
    assert inf.param_specs == tr.param_specs and inf.n_params == tr.n_params > 0


def test_the_programs_run_without_a_trace_to_fill():
    record = example("tcn_forecaster")
    dev = TracingBackend(name="webgpu")
    model, optimizer = run_training(record, dev, batch=2, steps=1)
    assert optimizer is not None and all(p.grad is not None for p in model.parameters())
    model, none = run_inference(record, TracingBackend(name="webgpu"), batch=2)
    assert none is None and not model.training


def test_refusals_name_what_is_wrong():
    record = example("tcn_forecaster")
    with pytest.raises(ScellisError, match="trace mode is inference or training, not 'eval'"):
        trace(record, mode="eval")
    with pytest.raises(ScellisError, match="precision policy must be f32 or mixed_f16"):
        run_inference(record, TracingBackend(), precision="bf16")
    bare = {k: v for k, v in record.items() if k != "loss"}
    with pytest.raises(ScellisError, match="needs the record's optimizer and loss"):
        run_training(bare, TracingBackend(), batch=2)
