"""A record's ``extensions:`` section: its user entries validate, plan, compile and train.

The CLI runs in a fresh process (nothing registered beforehand), from a working folder
other than the record's: the section's paths are relative to the record file.
"""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import scellis as sc
from scellis.catalog import entries
from scellis.catalog.extensions import load_record_extensions
from scellis.cli.main import main
from scellis.run.prepare import RecordProblems, check_record, prepare_run
from scellis.sml import parse

HERE = Path(__file__).resolve().parent
REC = HERE / "records" / "user_block.sml"
EXT = HERE / "user_ext"
SRC = str(HERE.parents[1] / "src")
BLOCK = "user/block/scaled_tanh"
SECTION = "extensions: [../user_ext/scaled_tanh.py]\n"
ABS = EXT / "scaled_tanh.py"


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": SRC, "XDG_RUNTIME_DIR": tempfile.mkdtemp()}
    return subprocess.run(
        [sys.executable, "-m", "scellis.cli.main", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
    )  # fmt: skip


def _three(rec: Path, cwd, *extra):
    """validate, plan and compile --emit ops of ``rec``, each in a fresh process."""
    return (
        _cli("validate", str(rec), *extra, cwd=cwd),
        _cli("plan", str(rec), "--device", "webgpu-spec", *extra, cwd=cwd),
        _cli("compile", str(rec), "--emit", "ops", *extra, cwd=cwd),
    )


def _assert_named(validate, plan, compile_):
    for r in (validate, plan, compile_):
        assert r.returncode == 0, r.stderr
    assert validate.stdout.endswith(": ok\n")
    assert "memory plan: GREEN" in plan.stdout
    # the user block's own parameter and its ops, labelled with its record name
    assert "param squash.gain" in compile_.stdout
    assert "[squash]" in compile_.stdout and "tanh(" in compile_.stdout


def test_the_record_section_loads_for_validate_plan_and_compile(tmp_path):
    _assert_named(*_three(REC, tmp_path))
    blocks = _cli("compile", str(REC), "--emit", "blocks", cwd=tmp_path)
    assert blocks.returncode == 0 and f"squash: {BLOCK} <- lstm" in blocks.stdout
    out = tmp_path / "w.safetensors"
    export = _cli("export", str(REC), "--to", "safetensors", "--out", str(out), cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    assert b'"squash.gain"' in out.read_bytes()[:4096]


def test_the_same_through_the_extensions_option(tmp_path):
    plain = tmp_path / "plain.sml"
    plain.write_text(REC.read_text().replace(SECTION, ""))
    refused = _cli("validate", str(plain), cwd=tmp_path)
    assert refused.returncode == 2 and f"unknown block_id '{BLOCK}'" in refused.stderr
    _assert_named(*_three(plain, tmp_path, "--extensions", str(EXT)))
    # repeated, and naming a file already loaded through the folder: loaded once
    again = ("--extensions", str(EXT / "scaled_tanh.py"), "--extensions", str(EXT))
    _assert_named(*_three(plain, tmp_path, *again))


@pytest.mark.parametrize(
    "item, message",
    [
        ("nowhere/missing.py", "nowhere/missing.py: no such catalog extension file or folder"),
        ("no_such_ext_module", "no catalog extension module named 'no_such_ext_module'"),
    ],
)
def test_a_missing_extension_is_one_located_line(tmp_path, item, message):
    rec = tmp_path / "missing.sml"
    rec.write_text(REC.read_text().replace(SECTION, f"extensions: [{item}]\n"))
    for r in _three(rec, HERE):
        assert r.returncode == 2
        assert r.stdout == "" and "Traceback" not in r.stderr
        lines = r.stderr.splitlines()
        assert len(lines) == 1, lines
        assert f"{rec}:3:14: {message}" in lines[0]
    if "/" in item:
        assert str(tmp_path / item) in lines[0]  # where it looked: beside the record


@pytest.mark.parametrize(
    "section, where, message",
    [
        ("extensions: ../user_ext/scaled_tanh.py", "3:13", "extensions must be a list"),
        ("extensions: {a: b.py}", "3:13", "extensions must be a list"),
        (f"extensions: [{ABS}, 3]", f"3:{len(str(ABS)) + 16}", "got 3"),
        ('extensions: [""]', "3:14", "an extension is a path or a dotted module name"),
    ],
)
def test_a_bad_extensions_value_is_located(tmp_path, capsys, section, where, message):
    rec = tmp_path / "bad.sml"
    rec.write_text(REC.read_text().replace(SECTION, section + "\n"))
    assert main(["validate", str(rec)]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{rec}:{where}: ") and message in first
    with pytest.raises(RecordProblems, match=message) as e:
        check_record(rec.read_text(), str(rec), base_dir=tmp_path, trusted=True)
    assert f"{e.value.line}:{e.value.col}" == where


EXT_COPY = ABS.read_text().replace(BLOCK, BLOCK + "_copy")


def test_check_record_loads_the_section_relative_to_base_dir_once(tmp_path, monkeypatch):
    (tmp_path / "my_blocks").mkdir()
    (tmp_path / "my_blocks" / "tanh_copy.py").write_text(EXT_COPY)
    text = REC.read_text().replace(SECTION, "extensions: [my_blocks]\n")
    text = text.replace(f"{BLOCK}\n", f"{BLOCK}_copy\n")
    monkeypatch.chdir(HERE)  # not the record's folder
    with pytest.raises(RecordProblems, match=r"my_blocks\.sml:3:14: no catalog extension"):
        check_record(
            text, "my_blocks.sml", trusted=True
        )  # relative to the working folder: not found
    assert BLOCK + "_copy" not in [e.id for e in entries()]
    record = check_record(text, "my_blocks.sml", base_dir=tmp_path, trusted=True)
    assert record["blocks"]["squash"]["block_id"] == BLOCK + "_copy"
    n = len(entries())
    # again, by the record's text, its dict and a parsed document: nothing registered twice
    assert check_record(text, "my_blocks.sml", base_dir=tmp_path, trusted=True) == record
    assert load_record_extensions(record, tmp_path, trusted=True) == []
    assert load_record_extensions(parse(text, "my_blocks.sml"), str(tmp_path), trusted=True) == []
    assert len(entries()) == n
    (problem,) = load_record_extensions({"extensions": ["gone.py"]}, tmp_path, trusted=True)
    assert str(problem).startswith("<record>:1:1: gone.py: no such catalog extension file")


def _flat(rows) -> list[float]:
    return [v for row in rows for v in (row if isinstance(row, list) else [row])]


def _rows(t) -> list[float]:
    return _flat(t.tolist())


def test_the_user_block_trains_from_the_record():
    record = check_record(REC.read_text(), str(REC), base_dir=REC.parent, trusted=True)
    run = prepare_run(record, "reference", base_dir=REC.parent)
    m, ds = run.model, run.dataset
    assert len(ds.x_train) == 14 and run.train.batch_size >= 14  # one batch: every window
    x = sc.tensor(ds.x_train, device="reference")
    y = [row[0] for row in ds.y_train]
    h = m.lstm(x).tolist()
    gain = m.squash.gain.tolist()
    assert gain == pytest.approx([1.5] * 3)
    # the block's own forward: gain * tanh(h / scale), scale 2
    t = [[math.tanh(v / 2.0) for v in row] for row in h]
    want = [[g * v for g, v in zip(gain, row)] for row in t]
    assert _rows(m.squash(m.lstm(x))) == pytest.approx(_flat(want), rel=1e-6, abs=1e-7)
    w, b = m.head.weight.tolist()[0], m.head.bias.tolist()[0]
    out = [sum(wj * aj for wj, aj in zip(w, row)) + b for row in want]
    assert _rows(m(x)) == pytest.approx(out, rel=1e-6, abs=1e-7)
    # one SGD step (lr 0.1) on the mean squared error: the gain's gradient by hand
    n = len(y)
    loss = sum((o - v) ** 2 for o, v in zip(out, y)) / n
    grad = [sum(2 * (o - v) * w[j] * row[j] for o, v, row in zip(out, y, t)) / n for j in range(3)]

    async def one_step():
        return [e async for e in run.fit(max_steps=1, log_every=1, validate=False)]

    events = asyncio.run(one_step())
    (log,) = [e for e in events if e["kind"] == "log"]
    assert log["step"] == 1 and log["loss"] == pytest.approx(loss, rel=1e-5)
    stepped = [g - 0.1 * d for g, d in zip(gain, grad)]
    assert m.squash.gain.tolist() == pytest.approx(stepped, rel=1e-5, abs=1e-7)
