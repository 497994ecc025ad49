"""Hostile SML records: numbers no record needs, in a file the user names or inside a
file they import.

An integer literal in hex or binary of a few thousand digits makes a Python int that
cannot even be printed (past 4,300 decimal digits): it must be refused where it is
read, at its line and column, not end as an unexpected error later.
"""

from __future__ import annotations

import os
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
