"""An imported GPT-2 (op by op) compiles, plans and replays its training steps.

A graph's data constants (a mask the exporter baked that is not causal) are buffers
made with the model, so the tracer sees every tensor a forward reads: the op graph
verifies, the plan is worked out, and on WebGPU replayed steps give the eager run's
losses.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")
pytest.importorskip("transformers")

from test_onnx_graphs import (  # noqa: E402
    TRAINING,
    _export,
    _input,
    _model,
    _ort,
    _ours,
    _scellis_input,
)

from scellis.cli.main import main  # noqa: E402
from scellis.codecs import read  # noqa: E402


@pytest.fixture(scope="module")
def gpt2_record(tmp_path_factory):
    """A fixed-shape dynamo export of a tiny GPT-2, imported with a text data section."""
    tmp = tmp_path_factory.mktemp("gpt2")
    model, shape = _model("gpt2", seed=12)
    rng = np.random.default_rng(12)
    _export(model, _input((2, 8), rng), tmp / "g.onnx", dynamo=True)
    rec, store = tmp / "g.sml", tmp / "store"
    assert main(["import", str(tmp / "g.onnx"), "--to", str(rec), "--store", str(store)]) == 0
    (tmp / "text.txt").write_text("".join(rng.choice(list("abcdefgh "), 400)))
    rec.write_text(rec.read_text() + TRAINING)
    return rec, store


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_compile_emit_ops_verifies(gpt2_record, capsys, mode):
    rec, _ = gpt2_record
    capsys.readouterr()
    assert main(["compile", str(rec), "--emit", "ops", "--mode", mode, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["problems"] == []
    # the attention block, traced as WebGPU runs it: the fused flash kernel
    assert "[node_scaled_dot_product_attention] " in got["text"]
    assert "= flash_attention(" in got["text"]


class _Windowed(torch.nn.Module):
    """Self-attention where each position sees itself and its two neighbours."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        near = (torch.arange(5)[:, None] - torch.arange(5)[None, :]).abs() <= 1
        self.register_buffer("window", torch.zeros(5, 5).masked_fill(~near, float("-inf")))

    def forward(self, x):
        return self.mha(x, x, x, attn_mask=self.window, need_weights=False)[0]


def test_a_baked_mask_is_a_traced_buffer(tmp_path, capsys):
    torch.manual_seed(1)
    x = torch.randn(2, 5, 8)
    _export(_Windowed().eval(), x, tmp_path / "w.onnx", dynamo=True)
    rec = tmp_path / "w.sml"
    assert main(["import", str(tmp_path / "w.onnx"), "--to", str(rec), "--store",
                 str(tmp_path / "store")]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["compile", str(rec), "--emit", "ops", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["problems"] == []
    masks = [line for line in got["text"].splitlines() if " buffer " in line]
    assert masks and all("f32[25]" in line for line in masks), masks
    # a mask neither causal nor empty keeps the attention op by op (its Add reads it),
    # and that forward is onnxruntime's
    got = read(tmp_path / "w.onnx")
    assert "nn/scaled_dot_product_attention" not in {b["block_id"] for b in
                                                      got.record["blocks"].values()}  # fmt: skip
    x = torch.randn(2, 5, 8)
    y = _ours(got, "reference").eval()(_scellis_input(x, "reference"))
    np.testing.assert_allclose(np.asarray(y.tolist()), _ort(tmp_path / "w.onnx", x),
                               rtol=1e-4, atol=1e-5)  # fmt: skip


def test_plan_of_an_imported_gpt2(gpt2_record, capsys):
    rec, _ = gpt2_record
    capsys.readouterr()
    assert main(["plan", str(rec), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["verdict"] == "green", got


@pytest.mark.webgpu
def test_replayed_steps_equal_eager(gpt2_record, capsys):
    rec, store = gpt2_record

    def losses(*extra):
        argv = ["train", str(rec), "--store", str(store), "--device", "webgpu", "--json",
                "--max-steps", "5", *extra]  # fmt: skip
        assert main(argv) == 0
        events = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        end = next(e for e in events if e.get("kind") == "end")
        return [e["loss"] for e in events if e.get("kind") == "log"], end

    capsys.readouterr()
    eager, _ = losses()
    replayed, end = losses("--replay")
    assert len(eager) == 5 and replayed == eager
    assert end["replay"]["replayed_steps"] > 0, end["replay"]
