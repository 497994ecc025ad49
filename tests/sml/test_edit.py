"""SML edits keep everything else byte for byte: comments, key order, formatting."""

from __future__ import annotations

import pytest

from scellis.base.errors import ScellisError
from scellis.catalog.sml_registry import catalog_registry
from scellis.sml import emit, parse, render, to_form, to_graph, validate

REG = catalog_registry()

TEXT = """\
# my forecaster
model: me/f@1
inputs:
  x:   { shape: [batch, 20, 1] }   # one series

blocks:
  # the recurrent body
  lstm:
    block_id: nn/lstm
    in: x
    input_size: 1       # one feature
    hidden_size: 32
  head:
    block_id: nn/regression_head
    in: lstm            # reads the body
    in_features: 32
    pool: last

outputs: [head]
optimizer:  { block_id: training/optimizer/adam, lr: 0.01 }   # fast
loss: {block_id: training/loss/mse}
determinism_tier: debug
"""


def test_unchanged_round_trip():
    assert emit(parse(TEXT)) == TEXT


def test_set_existing_field_changes_only_that_value():
    doc = parse(TEXT)
    doc.set_field("lstm", "hidden_size", 64)
    assert emit(doc) == TEXT.replace("hidden_size: 32", "hidden_size: 64")
    doc.set_field("optimizer", "lr", 0.003)
    assert "{ block_id: training/optimizer/adam, lr: 0.003 }   # fast" in emit(doc)


def test_set_new_field_in_block_and_flow_mappings():
    doc = parse(TEXT)
    doc.set_field("lstm", "num_layers", 2)
    want = TEXT.replace("hidden_size: 32\n", "hidden_size: 32\n    num_layers: 2\n")
    assert emit(doc) == want
    doc.set_field("optimizer", "weight_decay", 0.01)
    want = want.replace("lr: 0.01 }", "lr: 0.01, weight_decay: 0.01 }")
    assert emit(doc) == want
    assert doc.data["optimizer"]["weight_decay"] == 0.01


def test_rewire_and_rename_update_references():
    doc = parse(TEXT)
    doc.rename_block("lstm", "body")
    want = TEXT.replace("  lstm:\n", "  body:\n").replace("in: lstm ", "in: body ")
    assert emit(doc) == want
    doc.rename_block("head", "out")
    assert "outputs: [out]\n" in emit(doc) and "  out:\n" in emit(doc)
    doc.rewire("out", "x")
    assert "    in: x            # reads the body\n" in emit(doc)


def test_add_and_remove_block():
    doc = parse(TEXT)
    doc.add_block("norm", "nn/layer_norm", inputs="lstm", after="lstm", normalized_shape=32)
    added = "    block_id: nn/layer_norm\n    in: lstm\n    normalized_shape: 32\n"
    want = TEXT.replace("  head:\n", "  norm:\n" + added + "  head:\n")
    assert emit(doc) == want
    doc.rewire("head", "norm")
    assert validate(doc, REG) == []
    doc.rewire("head", "lstm")
    doc.remove_block("norm")
    assert emit(doc) == TEXT


def test_graph_and_form_edits_share_the_record():
    doc = parse(TEXT)
    g = to_graph(doc, REG)
    assert {"id": "head", "block_id": "nn/regression_head", "out_shape": ["batch", 1]} in g["nodes"]
    assert {"from": "lstm", "to": "head"} in g["edges"] and g["outputs"] == ["head"]
    form = to_form(doc, REG)
    hs = next(f for f in form["blocks"]["lstm"]["fields"] if f["name"] == "hidden_size")
    assert hs["value"] == 32 and hs["type"] == "int" and hs["min"] == 1 and hs["doc"]
    out = next(f for f in form["blocks"]["lstm"]["fields"] if f["name"] == "output")
    assert out["choices"] == ["sequence", "last"] and out["default"] == "sequence"
    assert form["pipeline"]["optimizer"]["block_id"] == "training/optimizer/adam"
    doc.set_field("lstm", "hidden_size", 16)  # a form edit...
    assert "shape mismatch: 'head' expects last dim 32, 'lstm' gives 16" in str(
        validate(doc, REG)[0]
    )
    doc.set_field("head", "in_features", 16)  # ...and the graph follows
    assert ["batch", 20, 16] in [n["out_shape"] for n in to_graph(doc, REG)["nodes"]]


def test_bad_edits_are_refused():
    doc = parse(TEXT)
    with pytest.raises(ScellisError):
        doc.set_field("nope", "x", 1)
    with pytest.raises(ScellisError):
        doc.rename_block("lstm", "head")
    with pytest.raises(ScellisError):
        doc.add_block("bad name", "nn/linear")
    assert emit(doc) == TEXT


@pytest.mark.parametrize("v", [0, -3, 2.5, 1e-05, 3.0, "adam", "a b", "yes", "", None, True,
                               [1, "x"], {"a": 1}])  # fmt: skip
def test_render_reads_back(v):
    assert parse(f"k: {render(v)}\n").data["k"] == v


def test_pipeline_scalars_and_sections_edit_in_place():
    doc = parse(TEXT)
    doc.set(("determinism_tier",), "prod")
    doc.set(("epochs",), 20)  # a new top-level key goes after the last one
    assert emit(doc) == TEXT.replace("tier: debug\n", "tier: prod\nepochs: 20\n")
    assert validate(doc, REG) == []


def test_values_shared_through_an_alias_are_not_edited_behind_the_users_back():
    doc = parse("a: &s {lr: 0.1}\nb: *s\n")
    with pytest.raises(ScellisError, match="alias"):
        doc.set(("b",), 3)
    assert emit(doc) == "a: &s {lr: 0.1}\nb: *s\n"


@pytest.mark.parametrize("name", ["lstm_forecaster.sml", "char_transformer.sml"])
def test_remove_key_deletes_one_key_in_block_and_flow_mappings(name):
    """Every key of a block section and of a flow one, removed in turn: the document
    reads as before less that key, its other lines and comments untouched."""
    from pathlib import Path

    from scellis.sml import parse

    text = (Path(__file__).resolve().parents[2] / "examples" / name).read_text()
    for section in ("data", "optimizer"):  # a block mapping and a flow one
        for key in list(parse(text, name).data[section]):
            doc = parse(text, name)
            doc.remove_key((section, key))
            again = parse(doc.text, name)
            want = {k: v for k, v in parse(text, name).data[section].items() if k != key}
            assert again.data[section] == want
            others = {k: v for k, v in again.data.items() if k != section}
            assert others == {k: v for k, v in parse(text, name).data.items() if k != section}
            kept = [ln for ln in text.splitlines() if ln.lstrip().startswith("#")]
            assert all(ln in doc.text for ln in kept if key not in ln)
    doc = parse(text, name)
    doc.remove_key(("data", "no_such_key"))
    assert doc.text == text
