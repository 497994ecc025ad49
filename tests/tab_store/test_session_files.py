"""Files too large for browser storage: an imported model's weights over the limit are
kept for the tab session only (said once, by the import), left out of every write-back
while the runs' rows and small objects are not, and once a reload lost them a run that
names them says why. A failed write-back leaves the largest saved file out from then on."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.webapp import import_api, run_api, session_files
from tinymodels import mlp, onnx_file, torch

RUN = dict(device="reference", max_steps=1, samples=False, validate=False, tier="prod")
LSTM = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()


def _train(text: str, store) -> list[dict]:
    async def go():
        return [e async for e in run_api.train(text, store=str(store), **RUN)]

    return asyncio.run(go())


@pytest.fixture
def imported(tmp_path, monkeypatch):
    """A small ONNX model imported into a store under ``tmp/persistent``, its weights
    object just over a lowered limit."""
    torch.manual_seed(3)
    picked = tmp_path / "picked"
    picked.mkdir()
    onnx_file(mlp(), torch.randn(2, 4), picked / "mlp.onnx")
    store = tmp_path / "persistent" / "store"
    monkeypatch.setattr(session_files, "KEEP_LIMIT", 256)
    got = import_api.import_model(str(picked), store=str(store))
    return got, store


def test_an_import_over_the_limit_is_kept_for_the_session_and_said_once(imported):
    got, store = imported
    root = store.parent
    assert got["session_only"].startswith("the weights of mlp.onnx (")
    assert "kept in this tab's memory until it closes" in got["session_only"]
    assert "import mlp.onnx again" in got["session_only"]
    left = session_files.unsaved_files(root=str(root))
    sha = got["record"].split("weights: sha256:")[1][:64]
    assert left["skip"] == [str(store / "objects" / "sha256" / sha[:2] / sha[2:])]
    assert left["say"] == [] and left["gone"] == []  # the import's line said it
    assert json.loads((root / session_files.NOTES).read_text())  # the note is written back


def test_runs_still_persist_and_a_reload_says_why_the_weights_are_gone(imported, monkeypatch):
    got, store = imported
    root = store.parent
    monkeypatch.setattr(session_files, "KEEP_LIMIT", 1 << 20)  # the run's objects are smaller
    assert _train(LSTM, store)[-1]["kind"] == "end"
    monkeypatch.setattr(session_files, "KEEP_LIMIT", 256)
    left = session_files.unsaved_files(root=str(root))
    assert not any("records.sqlite" in p for p in left["skip"])  # the rows are never left out
    # a reload: what was left out of the write-back is not there
    for path in left["skip"]:
        (root / path).unlink()
    gone = session_files.unsaved_files(root=str(root))["gone"]
    assert any(g.startswith("the weights of mlp.onnx (") and "import mlp.onnx again" in g
               for g in gone)  # fmt: skip
    assert session_files.unsaved_files(root=str(root))["gone"] == []  # once
    run = import_api.forward(got["record"], None, "reference", str(store))
    with pytest.raises(ScellisError) as e:
        asyncio.run(run)
    said = str(session_files.explained(e.value, root=root))
    assert said.startswith("the weights of mlp.onnx (") and "import mlp.onnx again" in said


def test_after_a_failed_write_back_the_largest_saved_file_is_left_out(tmp_path, monkeypatch):
    root = tmp_path / "persistent"
    (root / "store").mkdir(parents=True)
    (root / "store" / "records.sqlite").write_bytes(b"r" * 5000)  # never left out
    (root / "store" / "big.bin").write_bytes(b"b" * 3000)
    (root / "store" / "small.bin").write_bytes(b"s" * 2000)
    monkeypatch.setattr(session_files, "FAILED_FLOOR", 1000)
    assert session_files.unsaved_files(root=str(root))["skip"] == []
    left = session_files.unsaved_files(failed=True, root=str(root))
    assert left["skip"] == [str(root / "store" / "big.bin")]
    assert left["say"] == ["big.bin (2.93 KiB): too large for browser storage, so kept in this "
                           "tab's memory until it closes; after a reload, train or import it "
                           "again"]  # fmt: skip
    again = session_files.unsaved_files(root=str(root))
    assert again["skip"] == left["skip"] and again["say"] == []


@pytest.mark.parametrize(
    "text",
    ["[1, 2]", '{"a.bin": 3}', '{"a.bin": {"bytes": "9", "what": 1}}', '{"a.bin": {', "\x00"],
)
def test_a_malformed_notes_file_costs_only_its_entries(tmp_path, text, monkeypatch):
    """Notes cut short or written by something else never stop a write-back: the files
    over the limit are still left out, and the bad entries are not trusted."""
    monkeypatch.setattr(session_files, "KEEP_LIMIT", 64)
    (tmp_path / session_files.NOTES).write_text(text)
    big = tmp_path / "store" / "big.bin"
    big.parent.mkdir()
    big.write_bytes(bytes(range(256)) * 2)
    got = session_files.unsaved_files(root=str(tmp_path))
    assert got["skip"] == [str(big)] and len(got["say"]) == 1 and got["gone"] == []
    notes = json.loads((tmp_path / session_files.NOTES).read_text())
    assert list(notes) == ["store/big.bin"]
