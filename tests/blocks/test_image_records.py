"""A record of image blocks with non-square kernels, strides, padding and dilation: the
shape rules give what the built model gives, and its torch and ONNX exports reproduce it
(torch CPU and onnxruntime as the oracles)."""

from __future__ import annotations

import importlib.util
import random

import numpy as np
import pytest

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog.sml_shapes import infer_shape
from scellis.codecs import make
from scellis.codecs.weights import state_of
from scellis.model.build import RecordModel
from scellis.runtime.creation import zeros
from scellis.sml.registry import ShapeMismatch

torch = pytest.importorskip("torch")

CNN = {
    "model": "test/cnn@1",
    "inputs": {"img": {"shape": ["batch", 3, 9, 8], "dtype": "f32"}},
    "blocks": {
        "conv": {"block_id": "nn/conv2d", "in": "img", "in_channels": 3, "out_channels": 4,
                 "kernel_size": [3, 2], "stride": [1, 2], "padding": [1, 0]},
        "act": {"block_id": "nn/activation", "in": "conv", "function": "relu"},
        "pool": {"block_id": "nn/max_pool2d", "in": "act", "kernel_size": [2, 1],
                 "stride": [2, 1], "ceil_mode": True},
        "conv2": {"block_id": "nn/conv2d", "in": "pool", "in_channels": 4, "out_channels": 2,
                  "kernel_size": 3, "padding": "same", "dilation": [1, 2], "groups": 2},
        "avg": {"block_id": "nn/avg_pool2d", "in": "conv2", "kernel_size": 2,
                "stride": [1, 2], "padding": 1},
    },
    "outputs": ["avg"],
}  # fmt: skip


def _size(rng, hi: int):
    return rng.randint(1, hi) if rng.random() < 0.5 else [rng.randint(1, hi), rng.randint(1, hi)]


def _random_block(rng) -> tuple[str, dict]:
    if rng.random() < 0.5:
        k = _size(rng, 4)
        pad = rng.choice(["valid", "same", 0, 1, [1, 2]])
        stride = 1 if pad == "same" else _size(rng, 3)
        fields = {"in_channels": 2, "out_channels": 3, "kernel_size": k, "padding": pad,
                  "stride": stride, "dilation": _size(rng, 2)}  # fmt: skip
        return "nn/conv2d", fields
    k = [rng.randint(2, 4), rng.randint(2, 4)]
    kind = rng.choice(["nn/max_pool2d", "nn/avg_pool2d"])
    return kind, {"kernel_size": k, "stride": rng.choice([None, _size(rng, 3)]),
                  "padding": [rng.randint(0, k[0] // 2), rng.randint(0, k[1] // 2)],
                  "ceil_mode": rng.random() < 0.5}  # fmt: skip


def _one_block(kind: str, fields: dict, shape: list) -> dict:
    return {"model": "t/one@1", "inputs": {"x": {"shape": shape, "dtype": "f32"}},
            "blocks": {"b": {"block_id": kind, "in": "x", **fields}}, "outputs": ["b"]}  # fmt: skip


def test_shape_rules_give_the_shapes_the_blocks_compute():
    """On random fields and sizes: the rule's shape is the forward's, and where the rule
    refuses an input, the forward refuses it too."""
    rng, checked = random.Random(7), {"shape": 0, "refused": 0}
    for _ in range(60):
        kind, fields = _random_block(rng)
        shape = [2, 2, rng.randint(1, 9), rng.randint(1, 9)]
        m = RecordModel(_one_block(kind, fields, shape), device="null")
        full = {f: getattr(m.b.config, f) for f in m.b.config.__dataclass_fields__}
        try:
            want = infer_shape(kind, full, [shape])
        except ShapeMismatch:
            with pytest.raises(ScellisError):
                m(zeros(shape, "f32", "null"))
            checked["refused"] += 1
            continue
        assert list(m(zeros(shape, "f32", "null")).shape) == want, (kind, fields, shape)
        checked["shape"] += 1
    assert checked["shape"] > 20 and checked["refused"] > 3, checked


def _randomised() -> RecordModel:
    m = RecordModel(CNN, device="reference").eval()
    rng = np.random.default_rng(5)
    for path, p in list(m.named_parameters()):
        m.set_parameter(path, sc.tensor(rng.standard_normal(p.shape).astype(np.float32) * 0.5))
    return m


def _input() -> np.ndarray:
    return np.random.default_rng(6).standard_normal((2, 3, 9, 8)).astype(np.float32)


def test_torch_export_of_the_cnn_reproduces_scellis(tmp_path):
    m = _randomised()
    make("codec/torch_module").write(tmp_path, state_of(m), CNN)
    spec = importlib.util.spec_from_file_location("exported_cnn", tmp_path / "model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tm = mod.Model()
    tm.load_state_dict(torch.load(tmp_path / "state_dict.pt", weights_only=True), strict=True)
    x = _input()
    want = np.asarray(m(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    with torch.no_grad():
        got = tm.eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_onnx_export_of_the_cnn_runs_in_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    m = _randomised()
    path = tmp_path / "cnn.onnx"
    make("codec/onnx_export").write(path, state_of(m), CNN)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    x = _input()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"img": x})[0]
    want = np.asarray(m(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_onnx_export_of_a_ceil_mode_average_counts_as_scellis(tmp_path):
    """The last window runs past the input: ONNX's divisor there is the block's."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    pool = {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}
    record = _one_block("nn/avg_pool2d", pool, ["batch", 2, 8, 5])
    m = RecordModel(record, device="reference")
    path = tmp_path / "avg.onnx"
    make("codec/onnx_export").write(path, state_of(m), record)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    x = np.random.default_rng(8).standard_normal((2, 2, 8, 5)).astype(np.float32)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    want = np.asarray(m(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    assert got[0].shape == want.shape == (2, 2, 5, 3)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)


def test_a_size_that_is_not_an_int_or_a_pair_is_refused_at_its_line():
    from scellis.catalog.sml_registry import catalog_registry
    from scellis.sml import parse, validate

    text = "\n".join([
        "model: t/bad@1",
        "inputs:",
        "  x: { shape: [batch, 2, 6, 6], dtype: f32 }",
        "blocks:",
        "  c: { block_id: nn/conv2d, in: x, in_channels: 2, out_channels: 3,",
        "       kernel_size: [3, 2, 1] }",
        "outputs: [c]",
    ])  # fmt: skip
    found = [str(d) for d in validate(parse(text, "m.sml"), catalog_registry())]
    assert any(
        "m.sml:6:" in d and "kernel_size must be int | tuple[int, int]" in d for d in found
    ), found
