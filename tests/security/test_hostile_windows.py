"""Hostile data settings: windows that overlap so much a small file takes gigabytes.

Each window is a copy of its rows, so a window of thousands of rows cut every row
holds each value thousands of times: a 300 KB text with context 2,000 and stride 1
would take over a billion values. The total is refused from the counts, before any
window is cut. Run in a child process under a memory limit, so the test fails rather
than takes the machine's memory when the bound is missing.
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN = "import sys; sys.path.insert(0, sys.argv[1]); from scellis.cli.main import main; " \
      "sys.exit(main(sys.argv[2:]))"  # fmt: skip


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _train(tmp_path, record: str) -> tuple[int, str]:
    (tmp_path / "r.sml").write_text(record)
    cli = ["train", str(tmp_path / "r.sml"), "--device", "reference", "--max-steps", "1"]
    argv = [sys.executable, "-c", RUN, str(ROOT / "src"), *cli, "--store", str(tmp_path / "s")]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=tmp_path,
                           preexec_fn=_limited)  # fmt: skip
    except subprocess.TimeoutExpired:
        return -1, "timed out"
    return r.returncode, r.stderr


def _edit(example: str, pairs) -> str:
    text = (ROOT / "examples" / example).read_text()
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new)
    return text


def _check(rc: int, err: str) -> None:
    lines = err.strip().splitlines()
    assert rc == 2, f"exit {rc}: {err[-500:]}"
    assert len(lines) == 1 and "Traceback" not in err, err[-500:]
    assert "windows of" in lines[0] and "larger stride" in lines[0], lines[0]


def test_a_csv_window_of_thousands_at_stride_one_is_refused(tmp_path):
    rng = random.Random(os.urandom(8))
    rows = "".join(f"{rng.random():.3f}\n" for _ in range(20000))
    (tmp_path / "d.csv").write_text("v\n" + rows)
    record = _edit("lstm_forecaster.sml", [
        ("shape: [batch, 20, 1]", "shape: [batch, 5000, 1]"), ("window: 20 ", "window: 5000 "),
        ("source: bundled:sunspots_yearly.csv", "source: d.csv"), ("column: sunspots", "column: v"),
        ("val_fraction: 0.2 ", "val_fraction: 0.5 "),
    ])  # fmt: skip
    _check(*_train(tmp_path, record))


def test_a_text_context_of_thousands_at_stride_one_is_refused(tmp_path):
    rng = random.Random(os.urandom(8))
    (tmp_path / "t.txt").write_text("".join(rng.choice("abcdefgh \n") for _ in range(100000)))
    record = _edit("char_transformer.sml", [
        ("source: bundled:python_help_topics.txt", "source: t.txt"),
        ("context: 32", "context: 2000"), ("stride: 16", "stride: 1"),
        ("max_chars: 60000", "max_chars: 100000"),
    ])  # fmt: skip
    _check(*_train(tmp_path, record))
