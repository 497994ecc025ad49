"""SML parsing: values, positions, and every guard refusing with file:line:col."""

from __future__ import annotations

import pytest

from scellis.base.errors import Diagnostic
from scellis.sml import emit, loader, parse


def err(text, file="m.sml") -> Diagnostic:
    with pytest.raises(Diagnostic) as e:
        parse(text, file)
    return e.value


def test_values_and_positions():
    doc = parse("model: a/b@1\nblocks:\n  x: {block_id: nn/linear, in_features: 0x10}\n")
    assert doc.data["blocks"]["x"] == {"block_id": "nn/linear", "in_features": 16}
    assert doc.where(("blocks", "x", "in_features")) == (3, 41)
    assert doc.where(("blocks", "x"), key=True) == (3, 3)


def test_scalars_follow_yaml_1_2_core():
    d = parse("a: [1, -2.5e-3, true, false, null, ~, 'yes', yes, .inf, 1_000]").data
    assert d["a"][:6] == [1, -0.0025, True, False, None, None]
    assert d["a"][6:8] == ["yes", "yes"]  # YAML 1.2: yes is a string
    assert d["a"][8] == float("inf") and d["a"][9] == 1000


def test_round_trip_is_byte_identical():
    text = "# c\nmodel:  a/b@1   # id\n\nblocks: { x: {block_id: nn/linear} }\n"
    assert emit(parse(text)) == text


@pytest.mark.parametrize(
    "text,where,words",
    [
        ("a: !!python/object/apply:os.system [ls]\n", (1, 4), "tag '!!python/object/apply"),
        ("a: 1\nb: !custom 3\n", (2, 4), "tag '!custom'"),
        ("a: 1\nb: 2\na: 3\n", (3, 1), "duplicate key 'a' (first at line 1, column 1)"),
        ("a:\n\tb: 1\n", (2, 1), "tab in indentation"),
        ("a:\n  <<: {b: 1}\n", (2, 3), "merge keys"),
        ("a: &x [*x]\n", (1, 4), "recursive alias"),
        ("a: [1, 2\n", (1, 9), "is not closed"),
        ("", (1, 1), "empty document"),
        ("- 1\n- 2\n", (1, 1), "mapping of sections"),
        ("a: 1\n---\nb: 2\n", (2, 1), "YAML:"),
        ("a: " + "[" * 100 + "]" * 100, None, "nest"),
    ],
)
def test_refusals_are_located(text, where, words):
    e = err(text)
    assert words in e.message and e.file == "m.sml"
    if where:
        assert (e.line, e.col) == where


def test_bad_utf8_points_at_the_byte():
    e = err(b"model: a/b@1\nx: caf\xe9\n")
    assert (e.line, e.col) == (2, 7) and "UTF-8" in e.message and e.fix


def test_long_lines_and_documents():
    e = err("a: " + "x" * (loader.MAX_LINE + 5))
    assert "limit is" in e.message and e.line == 1
    e = err(("a" * 80 + ": 1\n") * (loader.MAX_BYTES // 80))
    assert "characters; the limit" in e.message


def test_alias_bomb_is_refused():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    e = err("\n".join(lines) + "\n")
    assert "nodes" in e.message or "aliases" in e.message


def test_a_few_aliases_are_fine():
    d = parse("base: &b {lr: 0.1}\nother: *b\n").data
    assert d["other"] == {"lr": 0.1}
