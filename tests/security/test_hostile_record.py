"""Hostile SML records: numbers no record needs, in a file the user names or inside a
file they import.

An integer literal in hex or binary of a few thousand digits makes a Python int that
cannot even be printed (past 4,300 decimal digits): it must be refused where it is
read, at its line and column, not end as an unexpected error later.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hostile import refuse

from scellis.store.safetensors import dumps

ROOT = Path(__file__).resolve().parents[2]
RECORD = (ROOT / "examples" / "char_transformer.sml").read_text()
HUGE = {
    "hex": "0x" + "f" * 5000,
    "binary": "0b" + "1" * 9000,
    "octal": "0o" + "7" * 6000,
    "decimal": "9" * 5000,
}


def _record(literal: str) -> str:
    text = RECORD.replace("num_embeddings: 88", f"num_embeddings: {literal}")
    assert text != RECORD
    return text


@pytest.mark.parametrize("kind", sorted(HUGE))
def test_a_huge_integer_in_a_record_is_refused_at_its_place(tmp_path, capsys, kind):
    p = tmp_path / "m.sml"
    p.write_text(_record(HUGE[kind]))
    line = refuse(capsys, ["validate", p], r"m\.sml:\d+:\d+: an integer of more than 1000 digits")
    assert "bug" not in line


def test_a_huge_integer_in_an_imported_files_record_is_refused(tmp_path, capsys):
    data = os.urandom(16)
    meta = {"scellis.record": _record(HUGE["hex"])}
    p = tmp_path / "w.safetensors"
    p.write_bytes(dumps({"w": ("F32", (4,), data)}, meta))
    refuse(capsys, ["import", p, "--store", tmp_path / "s"], "more than 1000 digits")


ESC = "\\e]0;pwned\\a\\e[2J"  # YAML escapes: retitle the terminal, clear the screen


def test_an_escape_sequence_in_a_records_text_is_refused_at_its_place(tmp_path, capsys):
    p = tmp_path / "m.sml"
    p.write_text(RECORD.replace("bundled:python_help_topics.txt", f'"x{ESC}.txt"'))
    line = refuse(capsys, ["train", p, "--device", "reference"], r"m\.sml:\d+:\d+: .*control")
    assert "\x1b" not in line


def test_an_escape_sequence_in_an_imported_files_record_is_refused(tmp_path, capsys):
    meta = {"scellis.record": RECORD.replace("examples/char_transformer@1", f'"x/y{ESC}@1"', 1)}
    p = tmp_path / "w.safetensors"
    p.write_bytes(dumps({"w": ("F32", (4,), os.urandom(16))}, meta))
    line = refuse(capsys, ["import", p, "--store", tmp_path / "s"], "control characters")
    assert "\x1b" not in line


def test_control_characters_in_a_refusal_are_shown_escaped(tmp_path, capsys):
    p = tmp_path / "a\x1b]0;pwned\x07\x1b[2J.sml"  # a name from an archive, say
    line = refuse(capsys, ["train", p])
    assert "\x1b" not in line and "\\x1b]0;pwned\\x07" in line


def test_thousands_of_blocks_are_ordered_in_linear_time():
    # blocks are built in waves of what their inputs allow; finding each wave by a scan
    # of every block left took the square of the count (5,000 blocks: seconds)
    from scellis.model.build import _order

    n = 5000
    chain = {f"b{i}": {"in": f"b{i - 1}" if i else "x"} for i in range(n)}
    backwards = dict(reversed(list(chain.items())))
    for blocks in (chain, backwards):
        t0 = time.perf_counter()
        assert _order(blocks, {"x"}) == [f"b{i}" for i in range(n)]
        assert time.perf_counter() - t0 < 1.0
    fan = {"a": {"in": "x"}, "c": {"in": ["a", "b"]}, "b": {"in": "x"}, "d": {"in": "x"}}
    assert _order(fan, {"x"}) == ["a", "b", "d", "c"]  # each wave in the record's order
