"""The nn/* catalog entries: registered, documented, range-checked, seeded, browser-safe."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from blockutil import arr, gen

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog import blocks as B
from scellis.catalog import entries, lookup, schema

IDS = [
    "nn/activation",
    "nn/attention",
    "nn/avg_pool1d",
    "nn/avg_pool2d",
    "nn/batch_norm1d",
    "nn/batch_norm2d",
    "nn/classification_head",
    "nn/conv1d",
    "nn/conv2d",
    "nn/dropout",
    "nn/embedding",
    "nn/gated_mlp",
    "nn/global_pool1d",
    "nn/gru",
    "nn/layer_norm",
    "nn/learned_position",
    "nn/linear",
    "nn/lm_head",
    "nn/lstm",
    "nn/max_pool1d",
    "nn/max_pool2d",
    "nn/mlp",
    "nn/regression_head",
    "nn/residual",
    "nn/rms_norm",
    "nn/scaled_dot_product_attention",
    "nn/sequential",
    "nn/sinusoidal_position",
    "nn/tcn",
    "nn/token_type",
    "nn/transformer",
    "nn/transformer_block",
]

# one small config per block with random parameters
SAMPLES = {
    "nn/linear": B.LinearConfig(4, 3),
    "nn/embedding": B.EmbeddingConfig(5, 3),
    "nn/mlp": B.MLPConfig(4, 6),
    "nn/gated_mlp": B.GatedMLPConfig(4, 6),
    "nn/token_type": B.TokenTypeConfig(4),
    "nn/lstm": B.LSTMConfig(3, 4, 2),
    "nn/gru": B.GRUConfig(3, 4, 2),
    "nn/conv1d": B.Conv1dConfig(3, 4, 3, groups=1),
    "nn/conv2d": B.Conv2dConfig(4, 6, 3, padding=1, groups=2),
    "nn/tcn": B.TCNConfig(2, 3, 2),
    "nn/attention": B.AttentionConfig(4, 2),
    "nn/transformer_block": B.TransformerBlockConfig(4, 2),
    "nn/transformer": B.TransformerConfig(4, 2, 2),
    "nn/transformer@llama": B.TransformerConfig(
        4, 2, 1, norm="rms", mlp="gated", num_kv_heads=1, rotary=True
    ),
    "nn/learned_position": B.LearnedPositionConfig(6, 4),
    "nn/regression_head": B.RegressionHeadConfig(4, 2),
    "nn/classification_head": B.ClassificationHeadConfig(4, 3),
    "nn/lm_head": B.LMHeadConfig(4, 7),
    "nn/sequential": B.SequentialConfig(
        ({"block": "nn/linear", "in_features": 2, "out_features": 2},)
    ),
    "nn/residual": B.ResidualConfig((B.LinearConfig(2, 2),)),
}


def test_every_block_is_registered_and_documented():
    blocks = [e for e in entries("block") if e.id.startswith("nn/")]
    assert [e.id for e in blocks] == IDS
    for e in blocks:
        assert e.builtin and e.doc and lookup(e.id, "block") is e
        for f in schema(e):
            assert f.doc, f"{e.id}.{f.name} has no doc"
        json.dumps([f.as_json() for f in schema(e) if f.name != "layers"])
        first = (sys.modules[e.impl.__module__].__doc__ or "").splitlines()[0]
        assert "(catalog layer)" in first


def test_out_of_range_fields_are_refused():
    with pytest.raises(ScellisError, match="in_features"):
        B.Linear(B.LinearConfig(0, 3))
    with pytest.raises(ScellisError, match="output"):
        B.LSTM(B.LSTMConfig(3, 4, output="all"))
    with pytest.raises(ScellisError, match="multiple"):
        B.MultiHeadAttention(B.AttentionConfig(6, 4))
    with pytest.raises(ScellisError, match="did you mean"):
        B.build({"block": "nn/lineer", "in_features": 2, "out_features": 2})


@pytest.mark.parametrize("bid", sorted(SAMPLES))
def test_init_is_reproducible_from_the_seed(bid):
    entry = lookup(bid.split("@")[0], "block")
    cfg = SAMPLES[bid]

    def state(seed):
        return {k: arr(v) for k, v in entry.impl(cfg, gen=gen(seed)).state_dict().items()}

    a, b, c = state(7), state(7), state(8)
    assert a and list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    assert any(not np.array_equal(a[k], c[k]) for k in a if len(np.unique(a[k])) > 1)


def test_default_stream_is_the_eager_init_stream():
    sc.manual_seed(11)
    a = B.Linear(B.LinearConfig(3, 2))
    b = B.Linear(B.LinearConfig(3, 2), gen=gen(11))
    np.testing.assert_array_equal(arr(a.weight), arr(b.weight))
    sc.manual_seed(0)


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        B.LinearConfig(2, 2).in_features = 3


BROWSER = """
import json, sys
for name in ("numpy", "wgpu", "torch"):
    sys.modules[name] = None
import scellis as sc
from scellis.catalog import blocks as B
kw = dict(device="null")
emb = B.Embedding(B.EmbeddingConfig(11, 8), **kw)
pos = B.SinusoidalPosition(B.SinusoidalPositionConfig(8), **kw)
stack = B.Transformer(B.TransformerConfig(8, 2, 1, rotary=True), **kw)
head = B.LMHead(B.LMHeadConfig(8, 11, tie_to="emb"), embedding=emb, **kw)
rnn = B.LSTM(B.LSTMConfig(8, 4, output="last", bidirectional=True), **kw)
tcn = B.TCN(B.TCNConfig(8, 4, 2), **kw)
bn = B.BatchNorm1d(B.BatchNorm1dConfig(4), **kw)
pool = B.MaxPool1d(B.MaxPool1dConfig(2, 1), **kw)
glob = B.GlobalPool1d(B.GlobalPool1dConfig("avg"), **kw)
idx = sc.tensor([[1, 2, 3], [4, 5, 6]], device="null")
h = stack(pos(emb(idx)), sc.tensor([[True, True, False]] * 2, device="null"))
loss = sc.functional.cross_entropy(head(h), idx) + rnn(h).sum() + glob(pool(bn(tcn(h)))).sum()
loss.backward()
print(json.dumps({"shape": list(h.shape), "grads": all(p.grad is not None
      for m in (emb, stack, rnn, tcn, bn) for p in m.parameters())}))
"""


def test_blocks_run_with_numpy_blocked():
    src = str(Path(sc.__file__).resolve().parent.parent)
    r = subprocess.run(
        [sys.executable, "-c", BROWSER],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": src},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"shape": [2, 3, 8], "grads": True}
