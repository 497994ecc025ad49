"""Float16 weights (a Hugging Face folder saved in half precision) on a device whose
shaders read no f16 (a WebGPU adapter without shader-f16): widened to f32 on the host as
they upload, exactly as NumPy widens them; on a device with f16 they upload as they are."""

from __future__ import annotations

import numpy as np

from scellis.catalog.blocks import Linear, LinearConfig, Sequential
from scellis.codecs.raw import RawTensor, f16_to_f32
from scellis.codecs.weights import load_into
from scellis.devices.base import get_device


def _halves(rng, shape) -> np.ndarray:
    # subnormals, zeros of both signs, infinities and the largest half among normal draws
    a = (rng.standard_normal(shape) * 3).astype(np.float16).reshape(-1)
    special = [np.float16(6e-8), np.float16(-0.0), np.float16(0.0), np.inf, -np.inf, 65504]
    a[: min(a.size, 6)] = special[: a.size]
    return a.reshape(shape)


def test_host_widening_is_numpys():
    a = _halves(np.random.default_rng(0), (257,))
    got = np.frombuffer(f16_to_f32(a.tobytes()), np.float32)
    np.testing.assert_array_equal(got, a.astype(np.float32))


def test_f16_weights_load_into_a_device_without_f16(monkeypatch):
    dev = get_device("reference")
    model = Sequential.of(Linear(LinearConfig(5, 3), device=dev))
    w = _halves(np.random.default_rng(1), (3, 5))
    b = _halves(np.random.default_rng(2), (3,))
    raw = {"0.weight": RawTensor("F16", (3, 5), w.tobytes()),
           "0.bias": RawTensor("F16", (3,), b.tobytes())}  # fmt: skip
    asked = []
    real = type(dev).supports

    def no_f16(self, dtype):
        asked.append(dtype.name)
        return dtype.name != "f16" and real(self, dtype)

    monkeypatch.setattr(type(dev), "supports", no_f16)
    load_into(model, raw)
    assert "f16" in asked
    params = dict(model.named_parameters())
    np.testing.assert_array_equal(np.asarray(params["0.weight"].tolist()), w.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(params["0.bias"].tolist()), b.astype(np.float32))
    assert params["0.weight"].dtype.name == "f32"
