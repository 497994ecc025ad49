"""The store's commands: train --json events, runs, runs show, compare, models save/list."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import scellis
from scellis.cli.main import main
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from storeutil import write_record

SRC = str(Path(scellis.__file__).resolve().parent.parent)


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _train(capsys, rec, store, *extra):
    code, out, err = _cli(
        capsys, "train", str(rec), "--store", str(store), "--device", "reference", "--json",
        "--checkpoint-every", "4", *extra,
    )  # fmt: skip
    assert code == 0, err
    return [json.loads(x) for x in out.splitlines()]


def test_train_json_events_then_runs_and_show(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    events = _train(capsys, rec, store, "--max-steps", "9")
    info, end = events[0], events[-1]
    assert info["kind"] == "info" and info["store"] == str(store)
    logs = [e for e in events if e["kind"] == "log"]
    assert [e["step"] for e in logs] == list(range(1, 10))
    assert all(isinstance(e["loss"], float) and e["lr"] == 0.02 for e in logs)
    cks = [e["step"] for e in events if e["kind"] == "checkpoint"]
    assert cks == [4, 8, 9]
    assert end["kind"] == "end" and end["steps"] == 9 and end["run"] == info["run"]
    # the records hold the same numbers the events carried
    r = Records(store)
    assert r.metrics(end["run"]) == [(e["step"], e["loss"]) for e in logs]
    (ds,) = r.db.execute("SELECT hash, rows FROM datasets").fetchall()
    assert ds[0] == info["dataset"] and ds[1] == 62  # windows of the train and validation splits
    r.close()
    code, out, _ = _cli(capsys, "runs", "--store", str(store), "--json")
    (row,) = json.loads(out)
    assert row["status"] == "done" and row["step"] == 9 and row["last_checkpoint"]["step"] == 9
    assert row["checkpoints"] == [4, 8, 9] and row["tier"] == "debug" and row["seed"] == 11
    assert row["model_id"] == "test/tiny_lstm@1" and "resume" not in row
    assert ObjectStore(store).get(row["record_hash"]) == rec.read_bytes()
    code, out, _ = _cli(capsys, "runs", "show", row["id"][:15], "--store", str(store))
    assert code == 0 and f"run {row['id']}: done" in out and "step 9 (epoch 1)" in out


def test_a_killed_run_lists_as_interrupted_with_its_resume_command(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    harness = str(Path(__file__).resolve().parents[1] / "resume" / "harness.py")
    spec = {"cmd": "train", "pause_after": 6,
            "argv": [str(rec), "--store", str(store), "--device", "reference",
                     "--checkpoint-every", "4", "--json"]}  # fmt: skip
    p = subprocess.Popen(
        [sys.executable, harness, json.dumps(spec)], env={**os.environ, "PYTHONPATH": SRC},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    for line in p.stdout:
        if line.strip() == "PAUSED":
            break
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    code, out, _ = _cli(capsys, "runs", "--store", str(store))
    assert code == 0
    (rid,) = [ln.split()[0] for ln in out.splitlines()[1:] if "interrupted" in ln.split()[1:2]]
    assert f"{rid} was interrupted at step 6: scellis resume {rid} --store {store}" in out
    code, out, _ = _cli(capsys, "runs", "show", rid, "--store", str(store))
    assert "interrupted at step 6; resume from step 4 with: " in out
    assert f"scellis resume {rid} --store {store}" in out


@pytest.mark.webgpu
def test_resume_on_another_device_continues_and_says_bitwise_is_not_promised(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    end = _train(capsys, rec, store, "--max-steps", "4")[-1]
    code, out, err = _cli(
        capsys, "resume", end["run"], "--store", str(store), "--device", "webgpu",
        "--to-step", "6", "--json",
    )  # fmt: skip
    assert code == 0, err
    events = [json.loads(x) for x in out.splitlines()]
    (note,) = [e for e in events if e.get("bitwise") is False]
    assert "written on reference" in note["message"] and "runs on webgpu" in note["message"]
    assert "bitwise continuation is not promised" in note["message"]
    assert events[-1]["steps"] == 6
    r = Records(store)
    run = r.run(end["run"])
    assert run["device"] == "webgpu" and run["status"] == "done" and run["step"] == 6
    assert [s for s, _ in r.metrics(end["run"])] == list(range(1, 7))
    r.close()


def test_compare_shows_what_differs_and_both_curves(tmp_path, capsys):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    store = tmp_path / "s"
    ra = _train(capsys, write_record(a_dir, seed=1), store, "--max-steps", "6")[-1]["run"]
    rb = _train(capsys, write_record(b_dir, seed=2, lr=0.05), store, "--max-steps", "6")[-1]["run"]
    code, out, _ = _cli(capsys, "compare", ra, rb, "--store", str(store), "--json")
    assert code == 0
    c = json.loads(out)
    assert c["differs"]["seed"] == [1, 2] and "record_hash" in c["differs"]
    assert "-seed: 1" in c["record_diff"] and "+seed: 2" in c["record_diff"]
    r = Records(store)
    assert [row[1] for row in c["loss"]] == [v for _, v in r.metrics(ra)]
    assert [row[2] for row in c["loss"]] == [v for _, v in r.metrics(rb)]
    r.close()
    png = tmp_path / "curves.png"
    code, out, _ = _cli(capsys, "compare", ra, rb, "--store", str(store), "--png", str(png))
    assert "a = " + ra in out and "b = " + rb in out and "seed" in out
    assert "|" in out and ("a" in out.split("loss (a, b; * both)")[1])
    if importlib.util.find_spec("matplotlib") is None:
        assert code == 2 and "matplotlib is not installed" in out and not png.exists()
    else:
        assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_models_save_bumps_the_version_and_train_resolves_the_id(tmp_path, capsys, monkeypatch):
    rec, store = write_record(tmp_path), tmp_path / "s"
    text = rec.read_text()
    for want in (1, 2):
        code, out, _ = _cli(capsys, "models", "save", str(rec), "--store", str(store), "--json")
        assert code == 0
        saved = json.loads(out)
        assert saved["id"] == f"test/tiny_lstm@{want}"
        stored = ObjectStore(store).get(saved["object"]).decode()
        # only the version on the model line changed
        assert stored == text.replace("test/tiny_lstm@1", f"test/tiny_lstm@{want}")
    code, out, _ = _cli(capsys, "models", "list", "--store", str(store), "--json")
    assert [m["id"] for m in json.loads(out)] == ["test/tiny_lstm@1", "test/tiny_lstm@2"]
    monkeypatch.chdir(tmp_path)  # the stored record's data path is relative: resolved from here
    events = _train(capsys, "test/tiny_lstm@2", store, "--max-steps", "2")
    assert events[-1]["steps"] == 2
    r = Records(store)
    run = r.run(events[-1]["run"])
    assert run["model_id"] == "test/tiny_lstm@2" and run["record_hash"] == saved["object"]
    r.close()
    code, _, err = _cli(capsys, "train", "test/tiny_lstm@7", "--store", str(store))
    assert code == 2 and "not in the store" in err and "test/tiny_lstm@2" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["runs", "--store", "/nonexistent/store"], "no store at"),
        (["resume", "nope", "--store", "{store}"], "no run 'nope'"),
        (["compare", "x", "y", "--store", "{store}"], "no run 'x'"),
        (["train", "nope/none@1", "--store", "{store}"], "not in the store"),
    ],
)
def test_bad_references_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    store = tmp_path / "s"
    Records(store).close()
    code, out, err = _cli(capsys, *[a.replace("{store}", str(store)) for a in argv])
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_store_and_checkpoint_modules_import_without_numpy():
    code = (
        "import sys\n"
        "for m in ('numpy', 'torch', 'safetensors', 'wgpu'): sys.modules[m] = None\n"
        "import scellis.store.objects, scellis.store.records, scellis.store.manifest\n"
        "import scellis.store.gc, scellis.store.safetensors, scellis.train.checkpoint\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": SRC})  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
