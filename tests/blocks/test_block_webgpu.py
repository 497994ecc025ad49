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
from scellis.base.errors import DeviceError  # noqa: E402
from scellis.catalog import blocks as B  # noqa: E402
from scellis.devices import get_device  # noqa: E402

pytestmark = pytest.mark.webgpu


@pytest.fixture(scope="module")
def gpu():
    try:
        return get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")


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
