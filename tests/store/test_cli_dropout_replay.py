"""The TCN example (dropout 0.1) replays under ``scellis train`` and ``scellis resume``:
every step's loss and the final weights are the eager run's, bit for bit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scellis.cli.main import main
from scellis.store.manifest import read_manifest
from scellis.store.objects import ObjectStore
from scellis.store.records import Records

pytestmark = pytest.mark.webgpu

TCN = Path(__file__).resolve().parents[2] / "examples" / "tcn_forecaster.sml"


def _cli(capsys, *argv) -> dict:
    code = main([*argv, "--device", "webgpu", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    events = [json.loads(x) for x in out.out.splitlines()]
    return next(e for e in events if e.get("kind") == "end")


def _train(capsys, store, steps, *extra) -> dict:
    return _cli(capsys, "train", str(TCN), "--store", str(store), "--max-steps", str(steps),
                "--log-every", "1", "--checkpoint-every", "6", *extra)  # fmt: skip


def _run(store) -> tuple[str, list, dict]:
    rec = Records(store)
    try:
        (run,) = rec.runs()
        losses = rec.metrics(run["id"], "loss")
        ck = rec.checkpoints(run["id"])[-1]
    finally:
        rec.close()
    return run["id"], losses, read_manifest(ObjectStore(store), ck["manifest"])


def _replayed(end) -> None:
    rec = end["replay"]
    assert rec["replayed_steps"] >= 3 and rec["dispatches_per_step"], rec
    assert not any("Philox" in why or "attrs" in why for why in rec["fallback"]), rec


def test_tcn_example_replays_and_resumes_bitwise(tmp_path, capsys):
    _train(capsys, tmp_path / "eager", 12, "--no-replay")
    _, want, want_ck = _run(tmp_path / "eager")
    _replayed(_train(capsys, tmp_path / "r", 6))
    rid, _, _ = _run(tmp_path / "r")
    _replayed(_cli(capsys, "resume", rid, "--store", str(tmp_path / "r"), "--to-step", "12"))
    _, got, got_ck = _run(tmp_path / "r")
    assert [s for s, _ in want] == list(range(1, 13))
    assert got == want  # every step's loss, float for float
    assert got_ck["weights"] == want_ck["weights"]  # identical bytes
    assert got_ck["rng_state"] == want_ck["rng_state"]
