"""User entries in SML: validated and shown in the form exactly like built-in ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from scellis.catalog.extensions import load_extensions
from scellis.catalog.sml_registry import catalog_registry
from scellis.sml import parse, to_form, validate

EXT = Path(__file__).resolve().parent / "user_ext"

DOC = """\
model: user/ada/squash@1
inputs:
  x: { shape: [batch, 4], dtype: f32 }
blocks:
  lin:
    block_id: nn/linear
    in: x
    in_features: 4
    out_features: 3
  act:
    block_id: user/block/scaled_tanh
    in: lin
    features: 3
    scale: 2.0
outputs: [act]
optimizer: { block_id: user/optimizer/decay_sgd, lr: 0.1 }
loss: { block_id: training/loss/mse }
epochs: 2
batch_size: 4
determinism_tier: debug
seed: 0
"""


@pytest.fixture(scope="module", autouse=True)
def _loaded():
    load_extensions([EXT])


def _messages(text: str) -> list[str]:
    return [str(d) for d in validate(parse(text, "m.sml"), catalog_registry())]


def test_a_record_with_user_entries_validates():
    assert _messages(DOC) == []


def test_user_fields_are_checked_like_builtin_ones():
    bad = _messages(DOC.replace("scale: 2.0", "scale: 0.0").replace("lr: 0.1", "lr: 0"))
    assert any("scale must be > 0" in m for m in bad)
    assert any("lr must be > 0" in m for m in bad)
    builtin = _messages(DOC.replace("out_features: 3", "out_features: 0"))
    assert any("out_features must be >= 1" in m for m in builtin)
    typo = _messages(DOC.replace("user/optimizer/decay_sgd", "user/optimizer/decay_sdg"))
    assert any("did you mean 'user/optimizer/decay_sgd'" in m for m in typo)


def test_form_lists_user_fields_like_builtin_ones():
    form = to_form(parse(DOC, "m.sml"), catalog_registry())
    act, lin = form["blocks"]["act"], form["blocks"]["lin"]
    assert act["doc"].startswith("A squashing nonlinearity")
    rows = {f["name"]: f for f in act["fields"]}
    assert rows["scale"]["value"] == 2.0 and rows["scale"]["set"]
    assert rows["init_gain"]["value"] == 1.0 and not rows["init_gain"]["set"]
    assert set(rows["scale"]) == set(lin["fields"][0])
    opt = form["pipeline"]["optimizer"]
    assert opt["block_id"] == "user/optimizer/decay_sgd"
    assert [f["name"] for f in opt["fields"]] == ["lr", "decay"]
