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
from storeutil import STEPS_PER_EPOCH, write_record

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


def _kill_at(rec, store, step):
    harness = str(Path(__file__).resolve().parents[1] / "resume" / "harness.py")
    spec = {"cmd": "train", "pause_after": step,
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


def test_a_killed_run_lists_as_interrupted_with_its_resume_command(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    _kill_at(rec, store, 6)
    code, out, _ = _cli(capsys, "runs", "--store", str(store))
    assert code == 0
    (rid,) = [ln.split()[0] for ln in out.splitlines()[1:] if "interrupted" in ln.split()[1:2]]
    assert f"{rid} (interrupted at step 6): scellis resume {rid} --store {store}" in out
    code, out, _ = _cli(capsys, "runs", "show", rid, "--store", str(store))
    assert "interrupted at step 6; resume from step 4 with: " in out
    assert f"scellis resume {rid} --store {store}" in out


def test_killed_before_any_checkpoint_shows_the_command_that_starts_it_again(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    _kill_at(rec, store, 2)
    code, out, _ = _cli(capsys, "runs", "show", "last", "--store", str(store))
    assert "interrupted at step 2 before any checkpoint; start it again with: " in out
    assert f"scellis train {rec} --store {store} --device reference --checkpoint-every 4" in out


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


def test_retention_and_gc_keep_what_resume_needs(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    end = _train(capsys, rec, store, "--max-steps", "9", "--keep-last", "1")[-1]
    r = Records(store)
    kept = r.checkpoints(end["run"])
    r.close()
    # the last one, plus the best by loss when it is another
    assert kept[-1]["step"] == 9 and len(kept) <= 2
    objs = ObjectStore(store)
    before = {h for h, _ in objs.list()}
    code, out, _ = _cli(capsys, "runs", "gc", "--store", str(store), "--grace", "0", "--json")
    done = json.loads(out)
    assert code == 0 and len(done["deleted"]) >= 3 * (3 - len(kept))  # manifest + 2 objects each
    assert {h for h, _ in objs.list()} == before - set(done["deleted"])
    code, out, err = _cli(capsys, "resume", end["run"], "--store", str(store), "--to-step", "11")
    assert code == 0, err
    assert "from step 9" in out


def test_progress_bar_shows_step_loss_lr_rate_and_eta():
    import io

    from scellis.cli.progress import Progress

    buf = io.StringIO()
    bar = Progress(total=10, stream=buf)
    for step in (1, 2, 3):
        bar.update({"step": step, "loss": 0.5 / step, "lr": 0.001})
    bar.finish()
    last = buf.getvalue().split("\r")[-1]
    assert "3/10" in last and "loss 0.1667" in last and "lr 0.001" in last
    assert "steps/s" in last and "ETA " in last and last.endswith("\n")


def test_resume_refuses_a_finished_run_clearly(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    end = _train(capsys, rec, store, "--epochs", "1")[-1]
    code, _, err = _cli(capsys, "resume", end["run"], "--store", str(store))
    assert code == 2 and "is done at step 7" in err
    code, _, err = _cli(capsys, "resume", end["run"], "--store", str(store), "--to-step", "9")
    assert code == 2 and "finished its 1 epochs" in err


def test_a_record_naming_a_stored_model_builds_on_it(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    assert _cli(capsys, "models", "save", str(rec), "--store", str(store))[0] == 0
    over = tmp_path / "more.sml"
    over.write_text("model: test/tiny_lstm@1\nepochs: 1\nseed: 5  # another seed\n")
    events = _train(capsys, over, store)
    assert events[-1]["steps"] == STEPS_PER_EPOCH  # one epoch, from the overlay
    r = Records(store)
    run = r.run(events[-1]["run"])
    r.close()
    assert run["seed"] == 5 and run["model_id"] == "test/tiny_lstm@1"
    merged = ObjectStore(store).get(run["record_hash"]).decode()
    # the stored record with the two keys replaced, its blocks and comments intact
    assert merged == rec.read_text().replace("epochs: 3", "epochs: 1").replace(
        "seed: 11", "seed: 5"
    )
    over.write_text("model: test/tiny_lstm@4\nepochs: 1\n")
    code, _, err = _cli(capsys, "train", str(over), "--store", str(store))
    assert code == 2 and "test/tiny_lstm@4 is not in the store" in err


def test_a_corrupt_latest_checkpoint_is_named_and_the_one_before_is_used(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    end = _train(capsys, rec, store, "--max-steps", "9")[-1]
    r = Records(store)
    assert [c["step"] for c in r.checkpoints(end["run"])] == [4, 8, 9]
    manifest = r.checkpoints(end["run"])[-1]["manifest"]
    r.close()
    objs = ObjectStore(store)
    weights = json.loads(objs.get(manifest))["weights"]
    path = objs.path(weights)
    os.chmod(path, 0o644)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # one flipped byte in the last tensor
    path.write_bytes(bytes(data))
    code, out, err = _cli(capsys, "resume", end["run"], "--store", str(store), "--to-step", "11")
    assert code == 0, err
    assert f"skipped checkpoint at step 9: object {weights} is corrupt" in out
    assert "from step 8" in out
    r = Records(store)
    assert [c["step"] for c in r.checkpoints(end["run"])] == [4, 8, 11]
    resumed = r.metrics(end["run"])
    r.close()
    # the same 11 steps straight, in another store: the same curve
    other = tmp_path / "t"
    straight = _train(capsys, rec, other, "--max-steps", "11")[-1]
    r = Records(other)
    assert r.metrics(straight["run"]) == resumed
    r.close()
    with pytest.raises(Exception, match="corrupt"):
        objs.get(weights)  # still refused: never silently replaced


def test_resume_under_another_tier_continues_and_says_so(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    end = _train(capsys, rec, store, "--max-steps", "4")[-1]
    code, out, err = _cli(capsys, "resume", end["run"], "--store", str(store), "--tier", "prod",
                          "--to-step", "6")  # fmt: skip
    assert code == 0, err
    assert "debug tier) and this resume runs on reference (reference, prod tier)" in out
    assert "bitwise continuation is not promised" in out
    r = Records(store)
    run = r.run(end["run"])
    r.close()
    assert run["tier"] == "prod" and run["step"] == 6 and run["status"] == "done"
    code, _, err = _cli(capsys, "resume", end["run"], "--store", str(store), "--tier", "exact",
                        "--to-step", "8")  # fmt: skip
    assert code == 2 and "must be one of debug, prod, fast, got 'exact'" in err


def test_resume_from_an_older_checkpoint_branches_and_keeps_the_later_history(tmp_path, capsys):
    rec, store = write_record(tmp_path), tmp_path / "s"
    first = _train(capsys, rec, store, "--max-steps", "12")
    rid = first[-1]["run"]
    whole = {e["step"]: e["loss"] for e in first if e["kind"] == "log"}
    r = Records(store)
    before = r.metrics(rid, "loss"), [c["step"] for c in r.checkpoints(rid)]
    r.close()
    assert before[1] == [4, 8, 12]
    code, out, err = _cli(capsys, "resume", rid, "--store", str(store), "--step", "4", "--json")
    assert code == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    (said,) = [x for x in lines if x["kind"] == "resume"]
    branch = said["run"]
    assert branch != rid and said["parent"] == f"{rid}@4" and said["step"] == 4
    assert any(x["kind"] == "info" and "branches off" in x["message"] for x in lines)
    # the branch replays steps 5..12 from the same state: the losses of the first run
    again = {e["step"]: e["loss"] for e in lines if e["kind"] == "log"}
    assert sorted(again) == list(range(5, 13))
    assert all(abs(again[s] - whole[s]) <= 1e-6 * max(1.0, abs(whole[s])) for s in again)
    r = Records(store)
    try:
        # the parent's history is as it was; the branch has the parent's up to step 4
        assert (r.metrics(rid, "loss"), [c["step"] for c in r.checkpoints(rid)]) == before
        assert r.metrics(branch, "loss")[:4] == before[0][:4]
        assert r.run(branch)["status"] == "done" and r.run(branch)["step"] == 12
    finally:
        r.close()
    code, out, _ = _cli(capsys, "runs", "show", branch, "--store", str(store))
    assert code == 0 and f"branch of     {rid}@4" in out
    code, out, _ = _cli(capsys, "runs", "--store", str(store))
    assert f"{branch} branches off {rid}@4" in out
    # from the last checkpoint the run itself continues: no branch
    code, out, err = _cli(capsys, "resume", rid, "--store", str(store), "--step", "12",
                          "--to-step", "13", "--json")  # fmt: skip
    assert code == 0, err
    assert not [x for x in map(json.loads, out.splitlines()) if x.get("parent")]
    code, _, err = _cli(capsys, "resume", rid, "--store", str(store), "--step", "5")
    assert code == 2 and "has no checkpoint at step 5 (it has: " in err


def test_compare_of_runs_on_different_data_shows_each_runs_baselines(tmp_path, capsys):
    import numpy as np  # noqa: PLC0415

    store, persistence = tmp_path / "s", []
    runs = []
    for name, scale in (("a", 1.0), ("b", 40.0)):
        folder = tmp_path / name
        folder.mkdir()
        rec = write_record(folder)
        text = rec.read_text().replace("batch_size: 16 }", "batch_size: 16, metrics: [mae] }")
        rec.write_text(text)
        series = folder / "series.csv"
        values = np.array([float(v) for v in series.read_text().split()[1:]]) * scale
        series.write_text("value\n" + "".join(f"{float(v)!r}\n" for v in values))
        runs.append(_train(capsys, rec, store, "--max-steps", "3")[-1]["run"])
        # the oracle: the last value of each validation window (4 in, 1 out, 20% held out)
        cut = round(len(values) * 0.8)
        starts = range(cut, len(values) - 4)
        persistence.append(np.mean([abs(values[s + 4] - values[s + 3]) for s in starts]))
    code, out, _ = _cli(capsys, "compare", *runs, "--store", str(store))
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.split()[:1] == ["mae"]]
    assert f"a: persistence {persistence[0]:.4g}" in row
    assert f"b: persistence {persistence[1]:.4g}" in row
