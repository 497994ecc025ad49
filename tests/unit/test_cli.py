"""The command line: version, the demo (the main job), bad input -> one line, exit 2."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": SRC, "XDG_RUNTIME_DIR": tempfile.mkdtemp()}
    return subprocess.run(
        [sys.executable, "-m", "scellis.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_version():
    r = _cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("scellis ")


def test_demo_trains_and_beats_persistence():
    r = _cli("demo", "--device", "reference", "--epochs", "15")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "validation MAE" in r.stdout and "persistence" in r.stdout


def test_bad_device_is_one_line_and_exit_2():
    r = _cli("demo", "--device", "no-such-device")
    assert r.returncode == 2
    assert "unknown device 'no-such-device'" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_bad_option_is_exit_2():
    r = _cli("demo", "--epochs", "many")
    assert r.returncode == 2 and "Traceback" not in r.stderr


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_train_runs_the_records_pipeline_with_json_events():
    import json

    r = _cli(
        "train",
        str(EXAMPLES / "lstm_forecaster.sml"),
        "--device",
        "reference",
        "--epochs",
        "3",
        "--log-every",
        "4",
        "--json",
        "--store",
        tempfile.mkdtemp(),  # never the repository's own ./.scellis
    )
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    logs = [e for e in events if e["kind"] == "log"]
    assert logs and all({"step", "loss", "lr"} <= set(e) for e in logs)
    assert events[-1]["kind"] == "end" and events[-1]["steps"] == 3 * 8


def test_train_refuses_an_invalid_record_with_positions(tmp_path):
    bad = tmp_path / "bad.sml"
    text = (EXAMPLES / "lstm_forecaster.sml").read_text()
    bad.write_text(text.replace("training/optimizer/adam", "training/optimizer/adamv"))
    r = _cli("train", str(bad), "--device", "reference")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "did you mean 'training/optimizer/adam" in r.stderr
    assert str(bad) + ":" in r.stderr
