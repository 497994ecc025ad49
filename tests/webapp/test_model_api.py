"""Model View's worker API: projections and edits of the example records, as JSON."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.sml import parse
from scellis.webapp import model_api

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
CHAR = (ROOT / "examples" / "char_transformer.sml").read_text()


def comments(text: str) -> list[str]:
    return [ln[ln.index("#") :] for ln in text.splitlines() if "#" in ln]


def node(result: dict, name: str) -> dict:
    return next(n for n in result["graph"]["nodes"] if n["id"] == name)


def field(result: dict, block: str, name: str) -> dict:
    return next(f for f in result["form"]["blocks"][block]["fields"] if f["name"] == name)


def test_project_examples_are_json_and_valid():
    for text, head_shape in ((LSTM, ["batch", 1]), (CHAR, ["batch", 32, 88])):
        r = model_api.project(text)
        assert json.loads(json.dumps(r)) == r  # what the worker posts must be plain JSON
        enc = json.loads(model_api.project(text, encoded=True))
        timing = ("py_ms", "py_end")
        assert {k: v for k, v in enc.items() if k not in timing} == {
            k: v for k, v in r.items() if k not in timing
        }
        assert r["ok"] and r["parsed"] and r["diagnostics"] == []
        assert r["text"] == text
        assert node(r, "head")["out_shape"] == head_shape
    r = model_api.project(LSTM)
    assert {(e["from"], e["to"]) for e in r["graph"]["edges"]} == {
        ("window", "lstm"),
        ("lstm", "head"),
    }
    hs = field(r, "lstm", "hidden_size")
    assert hs["value"] == 32 and hs["set"] and hs["type"] == "int"
    assert r["form"]["pipeline"]["optimizer"]["block_id"] == "training/optimizer/adam"
    # each field knows its line, so a diagnostic can be shown beside it
    assert LSTM.splitlines()[hs["line"] - 1].strip() == "hidden_size: 32"
    settings = {s["name"]: s["value"] for s in r["form"]["settings"]}
    assert settings == {"epochs": 60, "batch_size": 32, "seed": 0, "determinism_tier": "debug"}


def test_form_edit_changes_code_graph_and_keeps_comments():
    rng = random.Random(7)
    size = rng.randint(40, 200)
    r = model_api.edit(LSTM, {"kind": "set_field", "block": "lstm", "field": "hidden_size",
                              "value": size})  # fmt: skip
    assert f"hidden_size: {size}\n" in r["text"]
    assert comments(r["text"]) == comments(LSTM)
    # only the one value changed: every other line is byte-identical
    diff = [(a, b) for a, b in zip(LSTM.splitlines(), r["text"].splitlines()) if a != b]
    assert diff == [("    hidden_size: 32", f"    hidden_size: {size}")]
    assert node(r, "lstm")["out_shape"] == ["batch", size]
    assert field(r, "lstm", "hidden_size")["value"] == size
    # the head still expects 32: validation says so at the head's in:
    (d,) = r["diagnostics"]
    assert "shape mismatch" in d["message"] and "expects last dim 32" in d["message"]
    assert r["text"].splitlines()[d["line"] - 1].strip() == "in: lstm"


def test_pipeline_and_top_level_edits():
    lr = round(random.Random(3).uniform(1e-4, 1e-1), 6)
    r = model_api.edit(LSTM, {"kind": "set_field", "block": "optimizer", "field": "lr",
                              "value": lr})  # fmt: skip
    assert f"lr: {lr}" in r["text"] and r["ok"]
    r = model_api.edit(r["text"], {"kind": "set_field", "block": None, "field": "epochs",
                                   "value": 3})  # fmt: skip
    assert "\nepochs: 3\n" in r["text"] and comments(r["text"]) == comments(LSTM)
    bad = model_api.edit(LSTM, {"kind": "set_field", "block": "optimizer", "field": "lr",
                                "value": -1.0})  # fmt: skip
    (d,) = bad["diagnostics"]
    assert "lr must be > 0" in d["message"]
    line = bad["text"].splitlines()[d["line"] - 1]
    assert line[d["col"] - 1 :].startswith("-1.0")


def test_code_with_a_syntax_error_reports_line_col_and_no_graph():
    lines = LSTM.splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if "hidden_size" in ln)
    lines.insert(i + 1, "    hidden_size: 16\n")  # a duplicate key
    r = model_api.project("".join(lines))
    assert not r["parsed"] and r["graph"] is None and r["form"] is None
    (d,) = r["diagnostics"]
    assert d["line"] == i + 2 and d["col"] == 5 and "duplicate key" in d["message"]
    r = model_api.project(LSTM.replace("  lstm:\n", "  lstm\n  :\n", 1))
    assert not r["parsed"] and re.match(r"YAML: ", r["diagnostics"][0]["message"])


def test_add_rewire_rename_remove():
    r = model_api.edit(CHAR, {"kind": "add_block", "name": "drop", "block_id": "nn/dropout",
                              "in": "pos", "after": "pos", "fields": {"p": 0.1}})  # fmt: skip
    assert r["ok"], r["diagnostics"]
    assert [n["id"] for n in r["graph"]["nodes"]] == ["ids", "tok", "pos", "drop", "body", "head"]
    r = model_api.edit(r["text"], {"kind": "rewire", "block": "body", "in": "drop"})
    edges = {(e["from"], e["to"]) for e in r["graph"]["edges"]}
    assert ("drop", "body") in edges and ("pos", "body") not in edges
    assert "    in: drop\n" in r["text"] and comments(r["text"]) == comments(CHAR)
    r = model_api.edit(r["text"], {"kind": "rename_block", "old": "drop", "new": "dropout1"})
    edges = {(e["from"], e["to"]) for e in r["graph"]["edges"]}
    assert ("dropout1", "body") in edges and ("pos", "dropout1") in edges and r["ok"]
    r = model_api.edit(r["text"], {"kind": "remove_block", "name": "dropout1"})
    assert "dropout1:" not in r["text"] and "nn/dropout" not in r["text"]
    (d,) = r["diagnostics"]  # body now reads a block that is gone
    assert "'dropout1', which does not exist" in d["message"]
    r = model_api.edit(r["text"], {"kind": "rewire", "block": "body", "in": "pos"})
    assert r["ok"] and r["text"] == CHAR


def test_bad_edits_raise_user_errors():
    with pytest.raises(ScellisError, match="unknown edit"):
        model_api.edit(LSTM, {"kind": "explode"})
    with pytest.raises(ScellisError, match="no block named"):
        model_api.edit(LSTM, {"kind": "rewire", "block": "nope", "in": "lstm"})
    with pytest.raises(ScellisError, match="needs block"):
        model_api.edit(LSTM, {"kind": "rewire", "in": "lstm"})
    with pytest.raises(ScellisError, match="not a free block name"):
        model_api.edit(LSTM, {"kind": "rename_block", "old": "head", "new": "lstm"})


def test_catalog_lists_blocks_with_schemas():
    blocks = {e["id"]: e for e in model_api.catalog("block")}
    assert "nn/lstm" in blocks and "nn/linear" in blocks
    names = [f["name"] for f in blocks["nn/linear"]["fields"]]
    assert "in_features" in names and "out_features" in names


def test_webapp_imports_with_numpy_blocked():
    code = (
        "import sys\n"
        "for m in ('numpy', 'wgpu', 'torch'): sys.modules[m] = None\n"
        "from scellis.webapp import model_api\n"
        f"r = model_api.project({LSTM!r})\n"
        "print(r['ok'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src")})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_edits_of_the_same_text_are_independent():
    # the worker keeps the last Document; an edit of an older text must not see it
    a = model_api.edit(LSTM, {"kind": "set_field", "block": "lstm", "field": "hidden_size",
                              "value": 48})  # fmt: skip
    b = model_api.edit(LSTM, {"kind": "set_field", "block": "head", "field": "n_outputs",
                              "value": 2})  # fmt: skip
    assert "hidden_size: 48" in a["text"] and "hidden_size: 32" in b["text"]
    with pytest.raises(ScellisError):
        model_api.edit(b["text"], {"kind": "rewire", "block": "nope", "in": "lstm"})
    d = model_api.edit(b["text"], {"kind": "set_field", "block": "head", "field": "n_outputs",
                                   "value": 1})  # fmt: skip
    assert d["text"] == LSTM


def _fresh(fn, *args):
    """``fn`` with no Document kept from an earlier call (what a first call gives)."""
    model_api._last[0] = None
    out = fn(*args)
    return {k: v for k, v in out.items() if k not in ("py_ms", "py_end")}


def _kept(fn, *args):
    out = fn(*args)
    return {k: v for k, v in out.items() if k not in ("py_ms", "py_end")}


def test_a_typed_value_projects_like_a_fresh_parse():
    rng = random.Random(3)
    text = LSTM
    model_api.project(text)
    for _ in range(12):
        # a value typed in the code view: taken in place by the kept Document
        new = re.sub(r"(hidden_size: )\d+", lambda m: m[1] + str(rng.randint(1, 99)), text)
        new = re.sub(r"(lr: )[0-9.]+", lambda m: m[1] + str(rng.choice([0.5, 0.02, 1.0])), new)
        got = _kept(model_api.project, new)
        assert got == _fresh(model_api.project, new)
        text = new
    # the shape problem a typed value makes is located as a fresh parse locates it
    model_api.project(text)
    bad = re.sub(r"(in_features: )\d+", r"\g<1>7", text)
    got = _kept(model_api.project, bad)
    assert got["diagnostics"] and got == _fresh(model_api.project, bad)
    assert got["form"]["blocks"]["head"]["in_at"] == [got["diagnostics"][0]["line"], 9]


def test_a_failed_edit_leaves_no_half_edited_document():
    model_api.project(LSTM)
    with pytest.raises(ScellisError):
        model_api.edit(LSTM, {"kind": "set_field", "block": "nope", "field": "x", "value": 1})
    big = {"kind": "set_field", "block": "lstm", "field": "hidden_size", "value": "x" * 20_000}
    with pytest.raises(ScellisError):
        model_api.edit(LSTM, big)
    edit = {"kind": "set_field", "block": "lstm", "field": "hidden_size", "value": 40}
    assert _kept(model_api.edit, LSTM, edit) == _fresh(model_api.edit, LSTM, edit)


def test_a_plan_fix_applied_as_an_edit_gives_its_verdict():
    # the plan box's buttons send a remediation's ``set`` as one set_paths edit: the
    # edited text must plan as the remediation promised, comments kept
    from scellis.devices.base import get_device
    from scellis.run.planning import plan_steps
    from scellis.run.prepare import check_record

    def plan(text):
        return plan_steps(check_record(text.encode()), device=get_device("reference"),
                          budget="1GiB")[0]  # fmt: skip

    big = (
        LSTM.replace("hidden_size: 32", "hidden_size: 512")
        .replace("in_features: 32", "in_features: 512")
        .replace("batch_size: 32", "batch_size: 8192")
    )
    red = plan(big)
    assert red.verdict == "red"
    fixes = [r for r in red.remediations if r.set and r.verdict]
    assert any(r.verdict != "red" for r in fixes), [r.record() for r in red.remediations]
    for r in fixes:
        out = model_api.edit(big, {"kind": "set_paths", "set": r.set})
        assert out["ok"] and comments(out["text"]) == comments(big)
        fixed = plan(out["text"])
        assert (fixed.verdict, fixed.peak) == (r.verdict, r.peak), r.record()


def test_set_paths_makes_missing_sections_and_refuses_an_empty_edit():
    edits = {"finetune.quantize_base": "nf4", "eval.batch_size": 3}
    out = model_api.edit(LSTM, {"kind": "set_paths", "set": edits})
    data = parse(out["text"], "m.sml").data
    assert data["finetune"] == {"quantize_base": "nf4"} and data["eval"]["batch_size"] == 3
    assert comments(out["text"]) == comments(LSTM)
    with pytest.raises(ScellisError, match="set_paths"):
        model_api.edit(LSTM, {"kind": "set_paths", "set": {}})
    with pytest.raises(ScellisError, match="needs set"):
        model_api.edit(LSTM, {"kind": "set_paths"})


@pytest.mark.parametrize("source", ["lstm", "linear"])
def test_a_width_change_offers_the_mend_that_makes_the_next_block_fit(source):
    # a block's new width breaks the block that reads it; the problem carries the edit
    # that follows it, and applying that edit leaves a valid record whose shapes agree
    rng = random.Random()
    width = rng.randrange(33, 200)
    text = LSTM
    if source == "lstm":
        text = text.replace("hidden_size: 32", f"hidden_size: {width}")
        field, reader = "in_features", "head"
    else:  # a Linear put between the LSTM and the head, then widened
        text = text.replace("    in: lstm\n    in_features: 32",
                            "    in: mid\n    in_features: 32").replace(
            "  head:\n",
            f"  mid:\n    block_id: nn/linear\n    in: lstm\n    in_features: 32\n"
            f"    out_features: {width}\n  head:\n")  # fmt: skip
        field, reader = "in_features", "head"
    r = model_api.project(text)
    assert not r["ok"]
    (d,) = r["diagnostics"]
    assert "shape mismatch" in d["message"] and d["sets"] == {f"blocks.{reader}.{field}": width}
    fixed = model_api.edit(text, {"kind": "set_paths", "set": d["sets"]})
    assert fixed["ok"], fixed["diagnostics"]
    head = next(n for n in fixed["graph"]["nodes"] if n["id"] == reader)
    assert head["out_shape"] == ["batch", 1]
    assert parse(fixed["text"], "m.sml").data["blocks"][reader][field] == width


def test_a_mismatch_no_field_can_mend_offers_no_edit():
    # a rank the block cannot take is no width to follow: words only, no edit
    r = model_api.project(LSTM.replace("[batch, 20, 1]", "[batch, 1]"))
    (d,) = r["diagnostics"]
    assert "expects rank 3" in d["message"] and "sets" not in d
