"""``export --to torch``'s table: one entry per block kind of the catalog, each either a
torch child built from the record's fields and the Config's defaults, or a refusal that
says why.

Oracle for a mapped kind: torch itself. The written ``Model`` is run through Python
and its state dict must have exactly the parameter names and shapes the Scellis model
of the same one-block record has (what ``load_state_dict(strict=True)`` needs), with
only the kind's required fields given, so every default comes from the Config; given
the Scellis model's (random) weights, its forward must give the Scellis outputs.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog.registry import entries
from scellis.codecs.torch.source import _EXPORTS, _call, module_source
from scellis.model.build import RecordModel

torch = pytest.importorskip("torch")

SEQ = {"shape": ["batch", 5, 3], "dtype": "f32"}
ROW = {"shape": ["batch", 3], "dtype": "f32"}
IDS = {"shape": ["batch", 5], "dtype": "i32"}
IMG = {"shape": ["batch", 2, 7, 6], "dtype": "f32"}
# a mapped kind's required fields and its input: the rest is the Config's
SPECS = {
    "nn/linear": ({"in_features": 3, "out_features": 2}, ROW),
    "nn/regression_head": ({"in_features": 3}, ROW),
    "nn/classification_head": ({"in_features": 3, "n_classes": 4}, ROW),
    "nn/layer_norm": ({"normalized_shape": 3}, SEQ),
    "nn/rms_norm": ({"normalized_shape": 3}, SEQ),
    "nn/lstm": ({"input_size": 3, "hidden_size": 4}, SEQ),
    "nn/gru": ({"input_size": 3, "hidden_size": 4}, SEQ),
    "nn/embedding": ({"num_embeddings": 7, "embedding_dim": 3}, IDS),
    "nn/learned_position": ({"max_len": 8, "dim": 3}, SEQ),
    "nn/sinusoidal_position": ({"dim": 4}, {"shape": ["batch", 5, 4], "dtype": "f32"}),
    "nn/dropout": ({}, SEQ),
    "nn/mlp": ({"in_features": 3, "hidden_features": 5}, SEQ),
    "nn/attention": ({"embed_dim": 4, "num_heads": 2}, {"shape": ["batch", 5, 4], "dtype": "f32"}),
    "nn/transformer": (
        {"d_model": 4, "num_heads": 2, "num_layers": 2},
        {"shape": ["batch", 5, 4], "dtype": "f32"},
    ),
    "nn/transformer_block": (
        {"d_model": 4, "num_heads": 2},
        {"shape": ["batch", 5, 4], "dtype": "f32"},
    ),
    "nn/lm_head": ({"d_model": 4, "vocab_size": 7}, {"shape": ["batch", 5, 4], "dtype": "f32"}),
    "nn/activation": ({}, SEQ),
    "nn/conv2d": ({"in_channels": 2, "out_channels": 3, "kernel_size": [3, 2]}, IMG),
    "nn/max_pool2d": ({"kernel_size": [2, 3]}, IMG),
    "nn/avg_pool2d": ({"kernel_size": 2}, IMG),
}


def _record(kind: str, fields: dict, x: dict) -> dict:
    return {
        "model": "test/one_block@1",
        "inputs": {"x": x},
        "blocks": {"b": {"block_id": kind, "in": "x", **fields}},
        "outputs": ["b"],
    }


def _builtin_kinds() -> set[str]:
    return {e.id for e in entries("block") if e.builtin}


def test_every_block_kind_of_the_catalog_has_one_entry():
    assert set(_EXPORTS) == _builtin_kinds()
    assert set(SPECS) == {k for k, e in _EXPORTS.items() if e.make is not None}


@pytest.mark.parametrize("kind", sorted(k for k, e in _EXPORTS.items() if e.make is None))
def test_a_refused_kind_says_which_block_and_why(kind):
    record = _record(kind, {}, SEQ)
    message = rf"^block 'b': {kind} has no torch export \({_EXPORTS[kind].why}\)$"
    with pytest.raises(ScellisError, match=message):
        module_source(record, ["b"], {"b": ["x"]})


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_a_mapped_kind_is_the_torch_child_with_the_records_parameters(kind):
    record = _record(kind, *SPECS[kind])
    ours = RecordModel(record, device="null")
    namespace: dict = {}
    exec(module_source(record, ours.order, ours.wiring), namespace)  # noqa: S102 - our text
    theirs = namespace["Model"]().state_dict()
    want = {name: tuple(p.shape) for name, p in ours.named_parameters()}
    assert {name: tuple(t.shape) for name, t in theirs.items()} == want


def _torch_model(record: dict, ours: RecordModel):
    namespace: dict = {}
    exec(module_source(record, ours.order, ours.wiring), namespace)  # noqa: S102 - our text
    return namespace["Model"]()


def _draw(x: dict, rng) -> np.ndarray:
    shape = [2 if d == "batch" else d for d in x["shape"]]
    if x["dtype"] == "i32":
        return rng.integers(0, 7, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_a_mapped_kinds_forward_is_the_scellis_forward(kind):
    record = _record(kind, *SPECS[kind])
    rng = np.random.default_rng(random.randrange(1 << 30))
    ours = RecordModel(record, device="reference").eval()
    state = {}
    for path, p in list(ours.named_parameters()):
        state[path] = (rng.standard_normal(p.shape) * 0.5).astype(np.float32)
        ours.set_parameter(path, sc.tensor(state[path], device="reference"))
    theirs = _torch_model(record, ours).eval()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    x = _draw(SPECS[kind][1], rng)
    want = np.asarray(ours(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    with torch.no_grad():
        got = theirs(torch.from_numpy(x).long() if x.dtype == np.int32 else torch.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def test_a_kind_outside_the_table_is_refused_in_the_forward_too():
    with pytest.raises(ScellisError, match=r"^block 'b': my/block has no torch export$"):
        _call("b", {"block_id": "my/block", "in": "x"}, ["v_x"])
