"""A run's plan against what the WebGPU pool held: the device's memory within the bound.

A real run (``start_run``: the data, the loop's guarded steps, a validation pass at the
end) of an example record on a fresh lavapipe backend, eager and replayed. What the
pool held at its high-water mark (storages in use plus the free ones it keeps for their
size class, and the scratch storage) must lie within ``BOUND`` of the plan's peak: never
more than 1% over it, never more than 10% under. A plan that left out a category (the
pool's free storages, the validation batch's loss, the schedule's residency) falls
outside.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scellis.devices.webgpu import WebGPUBackend
from scellis.run.options import RunOptions
from scellis.run.session import start_run

pytestmark = pytest.mark.webgpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BOUND = (0.90, 1.01)  # held / planned


def _held_and_planned(name: str, edits: list[str], replay: bool) -> tuple[int, int, dict]:
    dev = WebGPUBackend()
    rec = EXAMPLES / name
    eval_batch = next(int(e.split("=")[1]) for e in edits if e.startswith("eval.batch_size="))
    opts = RunOptions(max_steps=6, set=edits, replay=replay, val_rows=eval_batch, log_every=6)

    async def drive():
        s = start_run(rec.read_bytes(), str(rec), options=opts, device=dev, base_dir=EXAMPLES)
        return [e.to_dict() async for e in s.events()]

    events = asyncio.run(drive())
    kinds = {e["kind"]: e for e in events}
    assert "end" in kinds, kinds.get("error")
    assert any(e["kind"] == "eval" for e in events)  # the forward the plan puts beside
    mem = dev.memory()
    return mem["held_peak_bytes"] + mem["scratch_bytes"], kinds["plan"]["peak"], kinds


CASES = [
    ("lstm_forecaster.sml", ["batch_size=8", "eval.batch_size=16"], False),
    ("lstm_forecaster.sml", ["batch_size=8", "eval.batch_size=16"], True),
    ("char_transformer.sml", ["batch_size=2", "eval.batch_size=4", "data.max_chars=3000"], False),
    ("char_transformer.sml", ["batch_size=2", "eval.batch_size=4", "data.max_chars=3000"], True),
    ("tcn_forecaster.sml", ["batch_size=8", "eval.batch_size=16"], True),  # dropout replayed
]


@pytest.mark.parametrize(
    "name,edits,replay",
    CASES,
    ids=["lstm", "lstm-replay", "transformer", "transformer-replay", "tcn-replay"],
)
def test_the_pool_holds_what_the_plan_says(name, edits, replay):
    held, planned, kinds = _held_and_planned(name, edits, replay)
    if replay:
        assert kinds["end"]["replay"]["replayed_steps"] > 0
        assert kinds["plan"]["replay_bytes"] > 0
    low, high = BOUND
    assert low * planned <= held <= high * planned, (name, replay, held, planned)
    # the pool's free storages are a category of their own in the plan
    assert kinds["plan"]["class_peaks"]["pooled"] > 0
