"""ONNX graphs exported at fixed shapes run at any batch (and length) once imported.

Both torch exporters, given no dynamic axes, bake the batch and length they traced into
Reshape targets and host masks; the importer finds the batch (and length) axis of each
value and rewrites those constants, so the record's input dims are ``batch`` (and
``seq``). GPT-2's length stays fixed: its position rows are folded for the exported
length. The oracle is torch's eager model at other sizes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")
pytest.importorskip("transformers")

from test_onnx_graphs import (  # noqa: E402
    MODELS,
    TRAINING,
    _export,
    _input,
    _model,
    _ours,
    _scellis_input,
)

from scellis.cli.main import main  # noqa: E402
from scellis.codecs import read  # noqa: E402


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
@pytest.mark.parametrize("kind", list(MODELS))
def test_fixed_shape_graph_runs_at_another_batch(tmp_path, kind, dynamo):
    model, shape = _model(kind, seed=11)
    rng = np.random.default_rng(11)
    path = tmp_path / f"{kind}.onnx"
    _export(model, _input(shape, rng), path, dynamo)  # batch 2, every dim fixed
    got = read(path)
    follows_length = kind != "gpt2"
    dims = ["batch", "seq", *shape[2:]] if follows_length else ["batch", *shape[1:]]
    assert got.record["inputs"]["x"]["shape"] == dims
    m = _ours(got, "reference").eval()
    lengths = (shape[1], 3, 7) if follows_length else (shape[1],) * 3
    for b, t in zip((3, 1, 2), lengths):
        x = _input((b, t, *shape[2:]), rng)
        y = np.asarray(m(_scellis_input(x, "reference")).tolist())
        with torch.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_scellis_trains_and_evaluates_a_fixed_shape_gpt2(tmp_path, capsys):
    model, shape = _model("gpt2", seed=6)
    rng = np.random.default_rng(6)
    # exported at batch 2 and length 8: the run's batches hold 4 windows of 8
    _export(model, _input((2, 8), rng), tmp_path / "g.onnx", dynamo=True)
    rec, store = tmp_path / "g.sml", str(tmp_path / "store")
    assert main(["import", str(tmp_path / "g.onnx"), "--to", str(rec), "--store", store]) == 0
    (tmp_path / "text.txt").write_text("".join(rng.choice(list("abcdefgh "), 600)))
    rec.write_text(rec.read_text() + TRAINING)
    capsys.readouterr()
    argv = ["train", str(rec), "--store", store, "--device", "reference", "--max-steps", "4"]
    assert main([*argv, "--json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    run = next(e["run"] for e in events if e.get("kind") == "end")
    assert main(["evaluate", run, "--store", store, "--device", "reference", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["val_loss"] > 0 and np.isfinite(got["val_loss"]), got


class _Padded(torch.nn.Module):
    """GPT-2 with a padding mask baked for the exported batch: its rows differ."""

    def __init__(self, gpt2):
        super().__init__()
        self.g = gpt2
        self.register_buffer("keep", torch.tensor([[1] * 6, [1] * 4 + [0] * 2]))

    def forward(self, ids):
        return self.g.m(input_ids=ids, attention_mask=self.keep, use_cache=False).logits


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_a_mask_that_differs_by_batch_row_keeps_the_exported_batch(tmp_path, dynamo):
    gpt2, shape = _model("gpt2", seed=13)
    model = _Padded(gpt2).eval()
    rng = np.random.default_rng(13)
    path = tmp_path / "p.onnx"
    _export(model, _input(shape, rng), path, dynamo)
    got = read(path)
    assert got.record["inputs"]["x"]["shape"] == list(shape)  # no batch to free
    x = _input(shape, rng)
    y = np.asarray(_ours(got, "reference").eval()(_scellis_input(x, "reference")).tolist())
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
