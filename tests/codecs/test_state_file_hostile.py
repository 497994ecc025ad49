"""scellis.load on files it did not write: one ScellisError naming the file, never another."""

from __future__ import annotations

import os

import pytest

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.store.safetensors import dumps

T = {"w": ("F32", (1,), b"\x00\x00\x80?")}


@pytest.mark.parametrize(
    ("tree", "match"),
    [
        ('{"a": {"__tensor__": "missing"}}', "KeyError"),
        ('{"a": {"__float__": "many"}}', "ValueError"),
        ('{"a": {"__items__": [[[1], 2]]}}', "TypeError"),
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nests too deeply"),
        ('{"a": ' + "9" * 5000 + "}", "ValueError"),
        ("not json", "JSONDecodeError"),
    ],
)
def test_hostile_trees(tmp_path, tree, match):
    p = tmp_path / "f.safetensors"
    p.write_bytes(dumps(T, {"scellis.tree": tree}))
    with pytest.raises(ScellisError, match=f"{p}: the saved tree .* is malformed .*{match}"):
        sc.load(p, "reference")


def test_not_a_regular_file_and_bad_bytes(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ScellisError, match="FIFO|neither a file"):
        sc.load(tmp_path / "pipe", "reference")
    (tmp_path / "bad").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(ScellisError, match=f"{tmp_path / 'bad'}: safetensors"):
        sc.load(tmp_path / "bad", "reference")
