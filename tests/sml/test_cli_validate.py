"""``scellis validate``: exit 0 and 'FILE: ok', or exit 2 with file:line:col lines."""

from __future__ import annotations

import json
from pathlib import Path

from scellis.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_examples_are_ok(capsys):
    files = [str(EXAMPLES / "lstm_forecaster.sml"), str(EXAMPLES / "char_transformer.sml")]
    assert main(["validate", *files]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{f}: ok" for f in files]


def test_problems_are_one_line_each(tmp_path, capsys):
    bad = tmp_path / "bad.sml"
    text = (EXAMPLES / "lstm_forecaster.sml").read_text()
    bad.write_text(text.replace("nn/lstm", "nn/lstmm").replace("lr: 0.01", "lr: -1"))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert err[0].startswith(f"{bad}:10:15: unknown block_id 'nn/lstmm'; did you mean 'nn/lstm'?")
    assert err[1].endswith("lr must be > 0, got -1")


def test_unreadable_and_binary_files(tmp_path, capsys):
    garbage = tmp_path / "g.sml"
    garbage.write_bytes(b"\x00\xff\xfe model: [")
    assert main(["validate", str(tmp_path / "missing.sml"), str(tmp_path), str(garbage)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(":1:" in line for line in err)
    assert "cannot read" in err[0] and "cannot read" in err[1]


def test_json_output(tmp_path, capsys):
    bad = tmp_path / "t.sml"
    bad.write_text("model: a/b@1\na: !!python/name:os.system x\n")
    assert main(["validate", "--json", str(bad)]) == 2
    row = json.loads(capsys.readouterr().out)
    assert row["ok"] is False and row["problems"][0]["line"] == 2
    assert "not allowed" in row["problems"][0]["message"]
