"""The text connector: char vocabulary, encoding, windows, split, version, bad UTF-8."""

from __future__ import annotations

import random

import pytest

from scellis.base.errors import ScellisError
from scellis.data import read_text, text_dataset


def test_hand_computed_windows_and_vocab():
    ds = text_dataset("abcabcabcabcabcabcab", context=3, stride=2, val_fraction=0.25)
    assert ds.vocab.chars == ["a", "b", "c"] and ds.cut == 15
    assert ds.x_train[:2] == [[0, 1, 2], [2, 0, 1]] and ds.y_train[0] == [1, 2, 0]
    # train ids [0, 15): starts 0, 2, ..., 10 (the last needs ids up to 14)
    assert len(ds.x_train) == 6
    assert ds.x_val == [[0, 1, 2]] and ds.y_val == [[1, 2, 0]]
    assert ds.vocab.decode(ds.vocab.encode("cab")) == "cab"


def test_random_text_windows_match_a_direct_slice():
    rng = random.Random(5)
    text = "".join(rng.choice("héllo wörld\n") for _ in range(500))
    ds = text_dataset(text, context=16, stride=5, val_fraction=0.2)
    ids = [ds.vocab.chars.index(c) for c in text]
    for k, (x, y) in enumerate(zip(ds.x_train, ds.y_train)):
        assert x == ids[5 * k : 5 * k + 16] and y == ids[5 * k + 1 : 5 * k + 17]
        assert 5 * k + 17 <= ds.cut
    assert all(len(x) == 16 for x in ds.x_val)
    order = ds.train_order(seed=1, epoch=0)
    assert sorted(order) == list(range(len(ds.x_train)))


def test_version_is_content_and_config():
    text = "the quick brown fox jumps over the lazy dog"
    a = text_dataset(text, context=4, val_fraction=0.3).digest
    assert a == text_dataset(text, context=4, val_fraction=0.3).digest
    assert a != text_dataset(text[:-1] + "g!", context=4, val_fraction=0.3).digest
    assert a != text_dataset(text, context=5, val_fraction=0.3).digest
    assert a != text_dataset(text, context=4, val_fraction=0.4).digest


def test_errors(tmp_path):
    with pytest.raises(ScellisError, match="too few for a context of 8"):
        text_dataset("short text", context=8)
    with pytest.raises(ScellisError, match="the text is empty"):
        text_dataset("", context=2)
    p = tmp_path / "bad.txt"
    p.write_bytes("line one\nline twö\nok".encode() + b"\n\xff\xfe")
    with pytest.raises(ScellisError, match=rf"^{p}:4:1: not UTF-8 \(byte 0xff\)"):
        read_text(p)
    good = tmp_path / "good.txt"
    good.write_text("ünïcode ok\n", encoding="utf-8")
    assert read_text(good) == "ünïcode ok\n"
    with pytest.raises(ScellisError, match="cannot read"):
        read_text(tmp_path / "missing.txt")


def test_windows_line_ends_read_as_python_text_mode_reads_them(tmp_path):
    rng = random.Random(11)
    lines = ["".join(rng.choice("ab cd") for _ in range(rng.randint(0, 9))) for _ in range(60)]
    ends = [rng.choice(["\r\n", "\r", "\n"]) for _ in lines]
    raw = "".join(a + b for a, b in zip(lines, ends))
    (tmp_path / "c.txt").write_bytes(raw.encode())
    with open(tmp_path / "c.txt", encoding="utf-8") as f:  # universal newlines: the oracle
        expected = f.read()
    assert "\r" not in expected and "\r" in raw
    ds = text_dataset(read_text(tmp_path / "c.txt"), context=8, stride=3, val_fraction=0.2)
    unix = text_dataset(expected, context=8, stride=3, val_fraction=0.2)
    assert "\r" not in ds.vocab.chars and ds.vocab.chars == unix.vocab.chars
    assert (ds.x_train, ds.x_val, ds.digest) == (unix.x_train, unix.x_val, unix.digest)
