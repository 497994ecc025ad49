"""Smoke: an LSTM and a transformer block train-step on WebGPU as on the reference device.

Tiny sizes (lavapipe is a software device). Both copies draw their own initial weights
from the same Philox seed on their own device, so the init is compared too.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest
from blockutil import gen, rng_for

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

import scellis as sc  # noqa: E402
from scellis.catalog import blocks as B  # noqa: E402

pytestmark = pytest.mark.webgpu


def _vals(t) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=np.float64)


def _step(block_of, inputs, device, name):
    m = block_of(device)
    ts = [
        sc.tensor(a, device=device, requires_grad=a.dtype.kind == "f")
        if a.dtype.kind != "b"
        else sc.tensor(a, device=device, dtype="bool")
        for a in inputs
    ]
    out = m(*ts)
    R = rng_for(name + ":R").standard_normal(out.shape).astype(np.float32)
    out.backward(sc.tensor(R, device=device))
    grads = {n: _vals(p.grad) for n, p in m.named_parameters()}
    grads.update({f"input{i}": _vals(t.grad) for i, t in enumerate(ts) if t.requires_grad})
    init = {n: _vals(p) for n, p in m.named_parameters()}
    return init, _vals(out), grads


def _agree(block_of, inputs, gpu, name):
    ref = _step(block_of, inputs, "reference", name)
    dev = _step(block_of, inputs, gpu, name)
    for n in ref[0]:
        np.testing.assert_allclose(dev[0][n], ref[0][n], rtol=0, atol=1e-6, err_msg=f"init {n}")
    np.testing.assert_allclose(dev[1], ref[1], rtol=0, atol=1e-4, err_msg="forward")
    for n in ref[2]:
        np.testing.assert_allclose(dev[2][n], ref[2][n], rtol=1e-4, atol=1e-4, err_msg=n)


def test_lstm_on_webgpu_agrees_with_reference(gpu):
    x = rng_for("gpu_lstm").standard_normal((2, 4, 3)).astype(np.float32)
    _agree(
        lambda d: B.LSTM(B.LSTMConfig(3, 4, num_layers=2), device=d, gen=gen(1)),
        [x],
        gpu,
        "gpu_lstm",
    )


def test_transformer_block_on_webgpu_agrees_with_reference(gpu):
    rng = rng_for("gpu_block")
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    keep = np.array([[True] * 4, [True, True, True, False]])
    cfg = B.TransformerBlockConfig(8, 2, 16, kind="decoder", rotary=True)
    _agree(lambda d: B.TransformerBlock(cfg, device=d, gen=gen(2)), [x, keep], gpu, "gpu_block")


def test_tcn_and_grouped_conv_on_webgpu_agree_with_reference(gpu):
    x = rng_for("gpu_tcn").standard_normal((2, 6, 2)).astype(np.float32)
    _agree(lambda d: B.TCN(B.TCNConfig(2, 3, 2, 2), device=d, gen=gen(3)), [x], gpu, "gpu_tcn")
    cfg = B.Conv1dConfig(4, 6, 3, stride=2, padding=1, groups=2)
    x = rng_for("gpu_conv").standard_normal((2, 7, 4)).astype(np.float32)
    _agree(lambda d: B.Conv1d(cfg, device=d, gen=gen(4)), [x], gpu, "gpu_conv")


def test_bidirectional_gru_on_webgpu_agrees_with_reference(gpu):
    x = rng_for("gpu_bigru").standard_normal((2, 4, 3)).astype(np.float32)
    cfg = B.GRUConfig(3, 4, bidirectional=True, output="last")
    _agree(lambda d: B.GRU(cfg, device=d, gen=gen(5)), [x], gpu, "gpu_bigru")


def test_pooling_and_batch_norm_on_webgpu_agree_with_reference(gpu):
    x = rng_for("gpu_pool").standard_normal((2, 7, 3)).astype(np.float32)

    def build(d):
        return B.Sequential(
            B.SequentialConfig(
                (
                    {"block": "nn/batch_norm1d", "num_features": 3},
                    {"block": "nn/max_pool1d", "kernel_size": 3, "stride": 2, "padding": 1},
                    {"block": "nn/avg_pool1d", "kernel_size": 2, "stride": 1},
                    {"block": "nn/global_pool1d", "mode": "max"},
                )
            ),
            device=d,
            gen=gen(6),
        )

    _agree(build, [x], gpu, "gpu_pool")
    stats = {}
    for d in ("reference", gpu):
        m = build(d)
        m(sc.tensor(x, device=d))
        stats[str(d)] = [_vals(t) for t in m.buffers()]
    ref, dev = stats.values()
    for a, b in zip(ref, dev):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-6)
