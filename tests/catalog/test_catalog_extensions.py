"""User catalog extensions: an authored optimizer and block work exactly like built-ins."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog import entries, lookup, schema
from scellis.catalog.extensions import load_extensions
from scellis.catalog.module import Module
from scellis.catalog.registry import check_config

EXT = Path(__file__).resolve().parent / "user_ext"
OPT, BLOCK = "user/optimizer/decay_sgd", "user/block/scaled_tanh"


@pytest.fixture(scope="module", autouse=True)
def _loaded():
    load_extensions([EXT])


def test_entries_are_listed_and_found_like_builtins():
    assert OPT in [e.id for e in entries("optimizer")]
    assert BLOCK in [e.id for e in entries("block")]
    assert OPT not in [e.id for e in entries("block")]
    opt, blk = lookup(OPT, "optimizer"), lookup(BLOCK, "block")
    assert not opt.builtin and not blk.builtin
    assert lookup("training/optimizer/sgd").builtin
    assert opt.doc.startswith("SGD with a step size")
    with pytest.raises(ScellisError, match="did you mean 'user/optimizer/decay_sgd'"):
        lookup("user/optimizer/decay_sdg", "optimizer")


def test_schema_and_range_checks_like_builtins():
    spec = {s.name: s for s in schema(lookup(BLOCK))}
    assert spec["features"].required and spec["features"].type == "int"
    assert spec["scale"].default == 1.0 and spec["scale"].exclusive_min
    assert spec["scale"].doc == "inputs are divided by this before tanh"
    cfg = lookup(BLOCK).config
    with pytest.raises(ScellisError, match="scale must be > 0"):
        check_config(cfg(3, scale=0.0))
    with pytest.raises(ScellisError, match="features must be >= 1"):
        lookup(BLOCK).impl(cfg(0), device="reference")
    # the same FieldSpec type and keys as a built-in's schema
    builtin = schema(lookup("training/optimizer/sgd"))[0].as_json()
    assert set(schema(lookup(OPT))[0].as_json()) == set(builtin)


def test_loading_twice_is_a_no_op():
    before = len(entries())
    again = load_extensions([EXT, EXT / "decay_sgd.py"])
    assert len(entries()) == before and len(again) == 3
    # relative to a record's folder
    assert load_extensions(["user_ext/scaled_tanh.py"], base_dir=EXT.parent) == again[1:2]


def test_block_runs_forward_and_backward():
    e = lookup(BLOCK, "block")
    blk = e.impl(e.config(3, scale=2.0, init_gain=1.5), device="reference")
    xs = [0.5, -1.0, 2.0]
    x = sc.tensor([xs], device="reference", requires_grad=True)
    y = blk(x)
    y.sum().backward()
    want = [1.5 * math.tanh(v / 2) for v in xs]
    assert y.tolist()[0] == pytest.approx(want, rel=1e-6)
    assert blk.gain.grad.tolist() == pytest.approx([math.tanh(v / 2) for v in xs], rel=1e-6)
    dx = [1.5 * (1 - math.tanh(v / 2) ** 2) / 2 for v in xs]
    assert x.grad.tolist()[0] == pytest.approx(dx, rel=1e-5)
    assert [n for n, _ in blk.named_parameters()] == ["gain"]


def test_optimizer_step_is_the_hand_computed_update():
    e = lookup(OPT, "optimizer")
    w = sc.tensor([1.0, -2.0], device="reference", requires_grad=True)
    opt = e.impl([w], lr=0.5, decay=1.0)
    for _ in range(2):
        w.grad = sc.tensor([0.4, 0.2], device="reference")
        opt.step()
    # step 1 at rate 0.5, step 2 at rate 0.5 / 2
    assert w.tolist() == pytest.approx([1.0 - 0.2 - 0.1, -2.0 - 0.1 - 0.05], rel=1e-6)


class _Net(Module):
    def __init__(self):
        super().__init__()
        self.lin = lookup("nn/linear").impl(lookup("nn/linear").config(2, 1), device="reference")
        self.act = lookup(BLOCK).impl(lookup(BLOCK).config(1), device="reference")

    def forward(self, x):
        return self.act(self.lin(x))


def test_optimizer_trains_a_model_with_the_block():
    model = _Net()
    loss_fn = lookup("training/loss/mse").impl()
    opt = lookup(OPT).impl(model, lr=0.3, decay=0.001)
    rows = [[0.3 * i - 1.0, math.sin(i)] for i in range(16)]
    x = sc.tensor(rows, device="reference")
    y = sc.tensor([[0.8 * math.tanh(0.7 * a - 0.4 * b)] for a, b in rows], device="reference")
    losses = []
    for _ in range(150):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]
