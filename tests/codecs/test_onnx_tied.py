"""Tied and value-merged initializers of torch-exported ONNX graphs, trained as torch does.

GPT-2's LM head reuses its token embedding: imported, that table is one parameter (the
head an ``nn/lm_head`` tied to the embedding block), so its gradient is the sum of both
uses and SGD moves it once. An untrained GPT-2's LayerNorm weights (ones) and zero
biases reach ONNX merged into one initializer per value; they stay separate parameters,
and after SGD steps every one equals torch's own training of the same model.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")
transformers = pytest.importorskip("transformers")

from test_onnx_graphs import _GPT2, VOCAB, _export, _input, _model, _ours, _scellis_input  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.codecs import read  # noqa: E402

SHAPE = (2, 6)


def _blocks(got, block_id: str) -> dict:
    return {k: b for k, b in got.record["blocks"].items() if b["block_id"] == block_id}


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_tied_embedding_is_one_parameter_with_the_summed_gradient(tmp_path, dynamo):
    model, shape = _model("gpt2", seed=8)
    rng = np.random.default_rng(8)
    path = tmp_path / "g.onnx"
    _export(model, _input(shape, rng), path, dynamo)
    got = read(path)
    (head,) = _blocks(got, "nn/lm_head").values()
    assert head["tie_to"] in _blocks(got, "nn/embedding")
    ours = _ours(got, "reference")
    # torch lists a tied tensor once: so must the import (one table, trained once)
    assert len(list(ours.named_parameters())) == len(list(model.named_parameters()))
    x = _input(shape, rng)
    r = rng.standard_normal((*shape, VOCAB)).astype(np.float32)
    (model(x) * torch.from_numpy(r)).sum().backward()
    (ours(_scellis_input(x, "reference")) * sc.tensor(r, device="reference")).sum().backward()
    table = getattr(ours, head["tie_to"]).weight
    want = model.m.transformer.wte.weight.grad.numpy()  # the head's and the lookup's, summed
    np.testing.assert_allclose(np.asarray(table.grad.tolist()), want, rtol=1e-4, atol=3e-5)


def _fresh_gpt2():
    """An untrained GPT-2 as transformers initialises it (every LayerNorm's weight ones
    and bias zeros), its dense biases drawn: the dynamo exporter drops an all-zero Gemm
    bias from the graph, and a parameter the file does not hold cannot be trained."""
    torch.manual_seed(3)
    m = _GPT2().eval()  # no dropout: the exported graph has none
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("bias") and ".ln_" not in name:
                p.copy_(torch.randn_like(p) * 0.1)
    return m


def _twin(value: np.ndarray, named: dict) -> str:
    """The torch parameter equal to an imported one (as is, transposed, or its first rows)."""
    hits = []
    for name, p in named.items():
        v = p.detach().numpy()
        n = value.shape[-2] if value.ndim >= 2 else 0
        for cand in (v, v.T, v[:n]):
            if cand.size == value.size and np.allclose(cand.reshape(value.shape), value,
                                                      rtol=1e-5, atol=1e-6):  # fmt: skip
                hits.append(name)
                break
    assert len(hits) == 1, f"{value.shape}: {hits}"
    return hits[0]


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_sgd_steps_match_torch_with_tied_and_merged_weights(tmp_path, dynamo):
    model = _fresh_gpt2()
    rng = np.random.default_rng(3)
    path = tmp_path / "g.onnx"
    _export(model, _input(SHAPE, rng), path, dynamo)
    ours = _ours(read(path), "reference")
    opt, want_opt = sc.optim.SGD(ours.parameters(), lr=0.5), torch.optim.SGD(model.parameters(),
                                                                            lr=0.5)  # fmt: skip
    for _ in range(3):
        x = _input(SHAPE, rng)
        y = rng.integers(0, VOCAB, SHAPE[0] * SHAPE[1])
        want_opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, VOCAB), torch.from_numpy(y))
        loss.backward()
        want_opt.step()
        opt.zero_grad()
        got = sc.nn.functional.cross_entropy(
            ours(_scellis_input(x, "reference")).reshape(-1, VOCAB),
            sc.tensor(y.astype(np.int32), device="reference", dtype="i32"),
        )
        got.backward()
        opt.step()
        assert abs(got.item() - loss.item()) < 1e-4
    named = dict(model.named_parameters())
    # every torch parameter has exactly one imported twin after training: the merged
    # norms and biases trained apart, the tied table trained once
    twins = [_twin(np.asarray(p.tolist(), dtype=np.float32), named)
             for _, p in ours.named_parameters()]  # fmt: skip
    assert sorted(twins) == sorted(named)
