"""A one-scalar edit applied in place (no re-read) leaves the Document exactly as a fresh
parse of the new text would: same values, same node and key positions, same errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml.nodes import ScalarNode

from scellis.base.errors import Diagnostic
from scellis.sml import parse

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("lstm_forecaster.sml", "char_transformer.sml")
TEXTS = [(ROOT / "examples" / n).read_text() for n in NAMES]


def positions(doc) -> dict:
    def at(n):
        s, e = n.start_mark, n.end_mark
        return (s.index, s.line, s.column, e.index, e.line, e.column, n.tag, n.value)

    out = {("v",) + p: at(n) for p, n in doc._nodes.items() if isinstance(n, ScalarNode)}
    out.update({("k",) + p: at(n) for p, n in doc._keys.items()})
    out.update({("c",) + p: at(n)[:6] for p, n in doc._nodes.items()})
    return out


def scalar_paths(doc) -> list:
    return sorted((p for p, n in doc._nodes.items() if isinstance(n, ScalarNode) and p), key=str)


values = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=True, width=64),
    st.booleans(),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
    st.sampled_from(["lstm", "a b", "yes", "null", "#x", "x: y", "-", "[1]", "{a}", "é"]),
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([0, 1]), st.integers(0, 10_000), values)
def test_in_place_edit_equals_a_fresh_parse(which, pick, value):
    doc = parse(TEXTS[which])
    paths = scalar_paths(doc)
    path = paths[pick % len(paths)]
    doc.set(path, value)
    fresh = parse(doc.text)
    assert doc.data == fresh.data
    assert positions(doc) == positions(fresh)
    # a second edit after the first, elsewhere, still agrees
    other = paths[(pick * 7 + 3) % len(paths)]
    doc.set(other, 12345)
    again = parse(doc.text)
    assert doc.data == again.data and positions(doc) == positions(again)


def test_in_place_edit_keeps_every_other_byte():
    text = TEXTS[0]
    doc = parse(text)
    doc.set(("blocks", "lstm", "hidden_size"), 640)
    assert doc.text == text.replace("hidden_size: 32", "hidden_size: 640")
    doc.set(("optimizer", "lr"), 0.5)
    assert "optimizer: { block_id: training/optimizer/adam, lr: 0.5 }" in doc.text
    assert doc.where(("loss", "block_id")) == parse(doc.text).where(("loss", "block_id"))


def test_a_value_the_guards_refuse_is_reported_like_a_fresh_parse():
    doc = parse(TEXTS[0])
    with pytest.raises(Diagnostic) as e1:
        doc.set(("blocks", "lstm", "hidden_size"), "x" * 20_000)
    with pytest.raises(Diagnostic) as e2:
        parse(TEXTS[0].replace("hidden_size: 32", "hidden_size: " + "x" * 20_000))
    assert str(e1.value) == str(e2.value)
    assert doc.text == TEXTS[0] and parse(doc.text).data == doc.data


def test_a_line_made_too_long_by_the_edit_is_refused():
    doc = parse(TEXTS[0])
    value = "y" * 9_995  # short enough alone, too long with its key on the line
    with pytest.raises(Diagnostic, match="line is"):
        doc.set(("blocks", "lstm", "hidden_size"), value)
    assert doc.text == TEXTS[0]


typed = st.text(st.sampled_from("0123456789.-+_aeZ :#,'\"[]{}\n"), max_size=4)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([0, 1]), st.integers(0, 10_000), st.integers(0, 3), typed)
def test_retext_equals_a_fresh_parse_or_declines(which, pos, cut, insert):
    """Any small typed change (``cut`` characters at ``pos`` replaced by ``insert``):
    taken in place only when it stays inside one plain scalar, and then exactly what a
    fresh parse gives; declined (False, nothing changed) otherwise."""
    text = TEXTS[which]
    doc = parse(text)
    before = positions(doc)
    at = pos % len(text)
    new = text[:at] + insert + text[at + cut :]
    try:
        fresh = parse(new)
    except Diagnostic:
        fresh = None
    taken = doc.retext(new)
    if not taken:
        assert doc.text == text and positions(doc) == before and doc.data == parse(text).data
        return
    assert fresh is not None and doc.text == new
    assert doc.data == fresh.data and positions(doc) == positions(fresh)


def test_retext_takes_a_typed_value_without_a_parse():
    doc = parse(TEXTS[0])
    new = TEXTS[0].replace("hidden_size: 32", "hidden_size: 48")
    assert doc.retext(new) and doc.data["blocks"]["lstm"]["hidden_size"] == 48
    assert positions(doc) == positions(parse(new))
    # a comment typed after the value, a new key, a quoted value: left to a parse
    for other in (
        new.replace("hidden_size: 48", "hidden_size: 48 # wide"),
        new.replace("hidden_size: 48", "hidden_size: 48\n    x: 1"),
        new.replace("hidden_size: 48", "hidden_size: '48'"),
    ):
        assert not doc.retext(other) and doc.text == new
