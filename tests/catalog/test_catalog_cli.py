"""``scellis catalog``: every entry with its kind and doc; ``--json`` adds the schemas."""

from __future__ import annotations

import json
from pathlib import Path

from scellis.catalog import entries
from scellis.cli.main import main

EXT = Path(__file__).resolve().parent / "user_ext"
KEYS = {"name", "type", "default", "required", "doc", "range", "choices"}


def _json(capsys, *argv):
    assert main(["catalog", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_lists_every_entry(capsys):
    assert main(["catalog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [ln.split()[0] for ln in lines]
    assert ids == [e.id for e in entries()]
    row = next(ln for ln in lines if ln.startswith("training/optimizer/sgd "))
    assert "optimizer" in row and "Stochastic gradient descent" in row


def test_kind_filter_and_schema_fields(capsys):
    out = _json(capsys, "--kind", "optimizer")
    assert {e["kind"] for e in out} == {"optimizer"}
    sgd = next(e for e in out if e["id"] == "training/optimizer/sgd")
    lr = next(f for f in sgd["fields"] if f["name"] == "lr")
    assert set(lr) == KEYS
    assert lr["type"] == "float" and lr["default"] == 1e-3 and not lr["required"]
    assert lr["range"] == {"min": 0.0, "max": None, "exclusive_min": True}
    loss = _json(capsys, "--kind", "loss")
    mse = next(e for e in loss if e["id"] == "training/loss/mse")
    assert mse["fields"][0]["choices"] == ["mean", "sum", "none"]
    lin = next(e for e in _json(capsys, "--kind", "block") if e["id"] == "nn/linear")
    feats = next(f for f in lin["fields"] if f["name"] == "in_features")
    assert feats["required"] and feats["default"] is None


def test_user_entries_listed_like_builtins(capsys):
    out = _json(capsys, "--extensions", str(EXT), "--extensions", str(EXT / "decay_sgd.py"))
    by_id = {e["id"]: e for e in out}
    opt, blk = by_id["user/optimizer/decay_sgd"], by_id["user/block/scaled_tanh"]
    assert set(opt) == set(by_id["training/optimizer/sgd"])
    assert not opt["builtin"] and opt["kind"] == "optimizer"
    assert blk["kind"] == "block" and all(set(f) == KEYS for f in blk["fields"])
    scale = next(f for f in blk["fields"] if f["name"] == "scale")
    assert scale["range"] == {"min": 0.0, "max": None, "exclusive_min": True}
    assert main(["catalog", "--kind", "block"]) == 0
    assert "user/block/scaled_tanh" in capsys.readouterr().out


def test_a_broken_extension_is_one_message_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text("import scellis\n\nscellis.nothing_here()\n")
    assert main(["catalog", "--extensions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scellis: error: {bad}:3: in catalog extension: AttributeError")
    assert "Traceback" not in err
