"""``scellis train --replay`` on WebGPU: the same per-step losses as the eager run, and the
run's end event says how many steps were replayed."""

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
    return logs, end


def test_replay_gives_the_eager_losses_bitwise(tmp_path, capsys):
    rec = write_record(tmp_path, seed=5)
    eager, _ = _losses(capsys, rec, tmp_path / "a")
    replayed, end = _losses(capsys, rec, tmp_path / "b", "--replay")
    assert len(eager) == 12 and eager == replayed
    assert end["replay"]["replayed_steps"] > 0, end["replay"]
