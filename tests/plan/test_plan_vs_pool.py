"""A run's plan against what the WebGPU pool held: the device's memory within the bound.

A real run (``start_run``: the data, the loop's guarded steps, a validation pass at the
end, the checkpoint a stored run writes as it ends) of an example record on a fresh
lavapipe backend, eager and replayed, and of a Llama-shaped QLoRA record. What the
pool held at its high-water mark (storages in use plus the free ones it keeps for their
size class, and the scratch storage) must lie within ``BOUND`` of the plan's peak: never
more than 1% over it, never more than 10% under. A plan that left out a category (the
pool's free storages, the validation batch's loss, the schedule's residency), or a
checkpoint that copied the weights and optimizer state before reading them, falls
outside.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from qlorarecords import llama_config, qlora_record
from scellis.devices.webgpu import WebGPUBackend
from scellis.run.options import RunOptions
from scellis.run.session import start_run

pytestmark = pytest.mark.webgpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BOUND = (0.90, 1.01)  # held / planned


def _held_and_planned(rec: Path, opts: RunOptions, store: Path) -> tuple[int, int, dict]:
    dev = WebGPUBackend()

    async def drive():
        s = start_run(rec.read_bytes(), str(rec), options=opts, device=dev, base_dir=rec.parent,
                      store=str(store))  # fmt: skip
        return [e.to_dict() async for e in s.events()]

    events = asyncio.run(drive())
    kinds = {e["kind"]: e for e in events}
    assert "end" in kinds, kinds.get("error")
    assert "checkpoint" in kinds  # read back as the run ends, beside everything it keeps
    mem = dev.memory()
    return mem["held_peak_bytes"] + mem["scratch_bytes"], kinds["plan"]["peak"], kinds


def _within_bound(held: int, planned: int, what) -> None:
    low, high = BOUND
    assert low * planned <= held <= high * planned, (what, held, planned)


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
def test_the_pool_holds_what_the_plan_says(name, edits, replay, tmp_path):
    eval_batch = next(int(e.split("=")[1]) for e in edits if e.startswith("eval.batch_size="))
    opts = RunOptions(max_steps=6, set=edits, replay=replay, val_rows=eval_batch, log_every=6)
    held, planned, kinds = _held_and_planned(EXAMPLES / name, opts, tmp_path / "store")
    assert "eval" in kinds  # the forward the plan puts beside
    if replay:
        assert kinds["end"]["replay"]["replayed_steps"] > 0
        assert kinds["plan"]["replay_bytes"] > 0
    _within_bound(held, planned, (name, replay))
    # the pool's free storages are a category of their own in the plan
    assert kinds["plan"]["class_peaks"]["pooled"] > 0


def test_a_qlora_run_holds_what_its_plan_says(tmp_path):
    # the frozen base's codes and scales are most of what the run keeps: a checkpoint
    # that copied them before reading held half as much again
    folder = tmp_path / "data"
    folder.mkdir()
    rec = folder / "qlora.sml"
    rec.write_text(qlora_record(folder, llama_config(64, 128, 16), "test/q@1", rank=2, seed=8))
    opts = RunOptions(max_steps=6, log_every=1, validate=False)
    held, planned, kinds = _held_and_planned(rec, opts, tmp_path / "store")
    assert kinds["end"]["replay"]["replayed_steps"] > 0
    _within_bound(held, planned, "qlora")
