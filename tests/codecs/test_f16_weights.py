"""Float16 weights (a Hugging Face folder saved in half precision) on a device whose
shaders read no f16 (a WebGPU adapter without shader-f16): they go up as stored, two
halves to a u32 word, and the device widens them (``widen_f16``) exactly as NumPy
widens them, subnormals, signed zeros, infinities and NaN included; on a device with f16
they upload as they are."""

from __future__ import annotations

import numpy as np
import pytest

from scellis.base.dtypes import u32
from scellis.catalog.blocks import Linear, LinearConfig, Sequential
from scellis.codecs.raw import RawTensor
from scellis.codecs.weights import load_into
from scellis.devices.base import get_device
from scellis.runtime.creation import from_bytes
from scellis.runtime.dispatch import apply


def _halves(rng, shape) -> np.ndarray:
    # subnormals (the smallest and largest), zeros of both signs, infinities, a NaN and
    # the largest half among normal draws
    a = (rng.standard_normal(shape) * 3).astype(np.float16).reshape(-1)
    special = [np.float16(6e-8), np.float16(-6.1e-5), np.float16(-0.0), np.float16(0.0),
               np.inf, -np.inf, np.nan, 65504, -65504]  # fmt: skip
    a[: min(a.size, len(special))] = special[: a.size]
    return a.reshape(shape)


def _without_f16(monkeypatch, dev) -> list:
    asked = []
    real = type(dev).supports

    def no_f16(self, dtype):
        asked.append(dtype.name)
        return dtype.name != "f16" and real(self, dtype)

    monkeypatch.setattr(type(dev), "supports", no_f16)
    return asked


def _same_bits(got, want: np.ndarray) -> None:
    np.testing.assert_array_equal(
        np.asarray(got, np.float32).view(np.uint32), want.astype(np.float32).view(np.uint32)
    )


@pytest.mark.webgpu
@pytest.mark.parametrize("n", [1, 2, 257, 4096 + 3])
def test_the_device_widens_halves_as_numpy_does(gpu, n):
    a = _halves(np.random.default_rng(n), (n,))
    data = a.tobytes() + b"\0\0" * (n % 2)
    for dev in (get_device("reference"), gpu):
        words = from_bytes(data, ((n + 1) // 2,), u32, dev)
        _same_bits(apply("widen_f16", (words,), n=n).tolist(), a)


@pytest.mark.webgpu
@pytest.mark.parametrize("device", ["reference", "webgpu"])
def test_f16_weights_load_into_a_device_without_f16(monkeypatch, gpu, device):
    dev = gpu if device == "webgpu" else get_device(device)
    model = Sequential.of(Linear(LinearConfig(5, 3), device=dev))
    w = _halves(np.random.default_rng(1), (3, 5))
    b = _halves(np.random.default_rng(2), (3,))  # an odd count: the last word half-empty
    raw = {"0.weight": RawTensor("F16", (3, 5), w.tobytes()),
           "0.bias": RawTensor("F16", (3,), b.tobytes())}  # fmt: skip
    asked = _without_f16(monkeypatch, dev)
    load_into(model, raw)
    assert "f16" in asked
    params = dict(model.named_parameters())
    _same_bits(params["0.weight"].tolist(), w)
    _same_bits(params["0.bias"].tolist(), b)
    assert params["0.weight"].dtype.name == "f32"
