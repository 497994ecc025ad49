"""``scellis train`` replays on WebGPU by default: the same per-step losses as the eager
run (``--no-replay``), the run's end event says how many steps were replayed, and an
``info`` event says once why steps ran eagerly instead."""

from __future__ import annotations

import json

import pytest

from scellis.cli.main import main
from storeutil import write_record

pytestmark = pytest.mark.webgpu


def _losses(capsys, rec, store, *extra):
    code = main(
        ["train", str(rec), "--store", str(store), "--device", "webgpu", "--json",
         "--max-steps", "12", *extra]
    )  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    events = [json.loads(x) for x in out.out.splitlines()]
    logs = [(e["step"], e["loss"]) for e in events if e.get("kind") == "log"]
    end = next(e for e in events if e.get("kind") == "end")
    said = [e["message"] for e in events if e.get("kind") == "info" and "step" in e]
    return logs, end, said


def test_replay_gives_the_eager_losses_bitwise(tmp_path, capsys):
    rec = write_record(tmp_path, seed=5)
    eager, eager_end, quiet = _losses(capsys, rec, tmp_path / "a", "--no-replay")
    replayed, end, said = _losses(capsys, rec, tmp_path / "b")
    assert len(eager) == 12 and eager == replayed
    assert eager_end["replay"] is None and not quiet
    rec_ = end["replay"]
    assert rec_["replayed_steps"] > 0 and rec_["eager_steps"] > 3, rec_  # short batches too
    # each reason once, however many steps it sent back to eager
    assert len(said) == len(rec_["fallback"]) >= 1, (said, rec_)
    assert all(m.startswith("replay: step ") and " ran eagerly: " in m for m in said), said
    assert any("data-dependent shape" in m for m in said), said
