"""A run stopped from outside — SIGTERM, or a reader that closed stdout — ends like one
stopped with Ctrl-C: a checkpoint at the step boundary, status interrupted, and a
resume that finishes it. Checks before step 0 refuse records that do not fit their data."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from scellis.store.records import Records
from storeutil import write_record

ROOT = Path(__file__).resolve().parents[2]

CLI = "import sys; from scellis.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _start(rec, store, *extra, stdout=subprocess.PIPE):
    argv = [sys.executable, "-c", CLI, "train", str(rec), "--device", "reference", "--store",
            str(store), "--json", "--log-every", "1", *extra]  # fmt: skip
    return subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE, text=True)


def _run_row(store):
    r = Records(store)
    try:
        (run,) = r.runs()
        return run, r.checkpoints(run["id"])
    finally:
        r.close()


def _slow_record(tmp_path):
    rec = write_record(tmp_path)
    rec.write_text(rec.read_text().replace("epochs: 3", "epochs: 400"))
    return rec


def test_sigterm_checkpoints_and_the_run_resumes(tmp_path):
    store = tmp_path / "s"
    p = _start(_slow_record(tmp_path), store)
    for line in p.stdout:
        if json.loads(line).get("step", 0) >= 5:
            break
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    tail = [json.loads(x) for x in out.splitlines()][-2:]
    assert tail[0]["kind"] == "error" and "interrupted at step" in tail[0]["message"]
    assert tail[1]["kind"] == "resume_hint" and "Traceback" not in err
    run, cks = _run_row(store)
    assert run["status"] == "interrupted" and cks and cks[-1]["step"] == run["step"]
    done = subprocess.run([sys.executable, "-c", CLI, "resume", run["id"], "--store", str(store),
                           "--to-step", str(run["step"] + 3)], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_closed_stdout_stops_the_run_cleanly(tmp_path):
    store = tmp_path / "s"
    p = _start(_slow_record(tmp_path), store)
    p.stdout.readline()
    p.stdout.close()  # the reader goes away (`scellis train ... | head -1`)
    deadline = time.time() + 120
    while p.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    err = p.stderr.read()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "BrokenPipe" not in err
    run, cks = _run_row(store)
    assert run["status"] == "interrupted" and cks


def test_a_window_the_data_does_not_make_is_refused_before_step_0(tmp_path):
    rec = write_record(tmp_path)
    rec.write_text(rec.read_text().replace("window: 4\n", "window: 6\n"))
    p = subprocess.run([sys.executable, "-c", CLI, "train", str(rec), "--device", "reference",
                        "--store", str(tmp_path / "s")], capture_output=True, text=True,
                       timeout=120)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "data.window makes windows of 6 steps" in p.stderr and "declares 4" in p.stderr
    assert "tiny.sml:" in p.stderr
    assert not _runs(tmp_path / "s")  # refused before a run was registered
    # the plan, before anything runs, says the same
    plan = subprocess.run([sys.executable, "-c", CLI, "plan", str(rec), "--device",
                           "reference"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert plan.returncode == 2 and "data.window makes windows of 6 steps" in plan.stderr


def _runs(store):
    if not (store / "records.sqlite").exists():
        return []
    r = Records(store)
    try:
        return r.runs()
    finally:
        r.close()


def test_a_vocabulary_smaller_than_the_texts_alphabet_is_refused_before_step_0(tmp_path):
    text = (ROOT / "examples" / "char_transformer.sml").read_text()
    assert "num_embeddings: 88 " in text
    rec = tmp_path / "small.sml"
    rec.write_text(text.replace("num_embeddings: 88 ", "num_embeddings: 40 "))
    p = subprocess.run([sys.executable, "-c", CLI, "train", str(rec), "--device", "reference",
                        "--store", str(tmp_path / "s")], capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = next(i for i, s in enumerate(rec.read_text().splitlines(), 1) if "num_embeddings" in s)
    assert f"small.sml:{line}:" in p.stderr
    assert "num_embeddings is 40, but the text has 88 distinct characters" in p.stderr
    assert not _runs(tmp_path / "s")


def _train_in_process(rec, store, capsys):
    from scellis.cli.main import main  # noqa: PLC0415

    code = main(["train", str(rec), "--device", "reference", "--store", str(store)])
    return code, capsys.readouterr().err


def test_features_the_input_does_not_declare_are_refused_before_step_0(tmp_path, capsys):
    rec = write_record(tmp_path)
    rows = (tmp_path / "series.csv").read_text().splitlines()
    extra = [f"{r},{i % 7}" for i, r in enumerate(rows[1:])]
    (tmp_path / "series.csv").write_text("\n".join(["value,weekday", *extra]) + "\n")
    rec.write_text(rec.read_text().replace("column: value", "features: [weekday, value]\n"
                                           "  target: value"))  # fmt: skip
    code, err = _train_in_process(rec, tmp_path / "s", capsys)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "tiny.sml:3:" in err and "declares 1 features per step but the data gives 2" in err
    assert not _runs(tmp_path / "s")
    rec.write_text(rec.read_text().replace("[batch, 4, 1]", "[batch, 4, 2]")
                   .replace("input_size: 1", "input_size: 2"))  # fmt: skip
    assert _train_in_process(rec, tmp_path / "s", capsys)[0] == 0  # once they agree, it trains


def test_outputs_per_window_other_than_the_horizon_are_refused_before_step_0(tmp_path, capsys):
    rec = write_record(tmp_path)
    rec.write_text(rec.read_text().replace("horizon: 1", "horizon: 2"))
    code, err = _train_in_process(rec, tmp_path / "s", capsys)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "block 'head' gives [1] per window but data.horizon is 2" in err
    assert "tiny.sml:6:" in err and "tiny.sml:19:" in err  # the head, and the horizon
    assert not _runs(tmp_path / "s")
    rec.write_text(rec.read_text().replace("n_outputs: 1", "n_outputs: 2"))
    assert _train_in_process(rec, tmp_path / "s", capsys)[0] == 0
