"""Every recurrent kernel variant (SCELLIS_RECURRENT_VARIANT) against the reference device.

The fused primitives run forward and backward on WebGPU with each variant and on the
reference device (f64, or its f16 emulation for f16), on shapes that stress the tiled
kernels: hidden sizes that are not a multiple of a tile, a batch of one, a batch that
is not a multiple of a tile's rows, and hidden 256 over a few steps. The cotangent is
random over every packed slot, so each gate gradient and both carries are exercised.

Tolerance, normwise per result (``max|got - want| <= tol * max|want|``): f32 holds
``4 * n * 2^-24`` with ``n`` = steps x (4H + 10), the case table's bound for these ops;
f16 rounds every stored value to 11 bits and the next step reads the rounded carries,
and the variants may round a value to the neighbouring f16 where the reference's f32
maths falls near a tie, so it holds 8 f16 ulps (2^-8) scaled by the steps.
"""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.base.errors import DeviceError
from scellis.devices.kernel_choice import choosing
from scellis.devices.webgpu.kernels.recurrent import (
    DEFAULT_VARIANT,
    NARROW_MAX_H,
    NARROW_MAX_ROWS,
    NARROW_VARIANT,
    SOFTWARE_VARIANT,
    VARIANT_ENV,
    VARIANTS,
)
from scellis.devices.webgpu.kernels.recurrent import (
    variant as chosen_variant,
)
from scellis.devices.webgpu.kernels.recurrent_stream import ROWS as STREAM_ROWS
from scellis.train.determinism import KERNELS

pytestmark = pytest.mark.webgpu

# (B, T, H): ragged H, B = 1, ragged B, and hidden 256 over two steps
SHAPES = [(1, 3, 5), (3, 4, 33), (9, 2, 37), (2, 2, 256)]


def _inputs(kind: str, b: int, t: int, h: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    g = 4 if kind == "lstm" else 3
    scale = 1.0 / np.sqrt(h)  # keeps the gates off saturation at every H
    arrays = [rng.standard_normal((b, t, g * h)), rng.standard_normal((b, h)) * 0.5]
    if kind == "lstm":
        arrays.append(rng.standard_normal((b, h)) * 0.5)
    arrays.append(rng.standard_normal((g * h, h)) * scale)
    if kind == "gru":
        arrays.append(rng.standard_normal(g * h) * 0.2)
    return [a.astype(np.float32) for a in arrays]


def _run(kind: str, arrays, device: str, dtype: str):
    ts = [sc.tensor(a, device=device, dtype=dtype, requires_grad=True) for a in arrays]
    y = ts[0].prim(f"{kind}_seq", *ts[1:])
    cot = np.random.default_rng(99).standard_normal(y.shape).astype(np.float32)
    (y * sc.tensor(cot, device=device, dtype=dtype)).sum().backward()
    grads = [np.array(t.grad.tolist(), dtype=np.float64) for t in ts]
    return [np.array(y.tolist(), dtype=np.float64), *grads]


def _check(got, want, tol: float) -> None:
    names = ["y", "d_gx", "d_h0", *(["d_c0"] if len(got) == 6 else []), "d_w", "d_bias"]
    for name, g, w in zip(names, got, want):
        scale = max(float(np.max(np.abs(w))), 1e-30)
        err = float(np.max(np.abs(g - w)))
        assert err <= tol * scale, f"{name}: max error {err:.3g} over {tol * scale:.3g}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_variant_matches_reference_f32(gpu, monkeypatch, variant, kind, shape):
    monkeypatch.setenv(VARIANT_ENV, variant)
    arrays = _inputs(kind, *shape, seed=sum(shape))
    want = _run(kind, arrays, "reference", "f64")
    got = _run(kind, arrays, "webgpu", "f32")
    b, t, h = shape
    _check(got, want, 4 * t * (4 * h + 10) * 2.0**-24)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_variant_matches_reference_f16(gpu, monkeypatch, variant, kind):
    if not gpu.supports(sc.f16):
        pytest.skip("this adapter lacks shader-f16")
    monkeypatch.setenv(VARIANT_ENV, variant)
    b, t, h = 3, 4, 33
    arrays = _inputs(kind, b, t, h, seed=5)
    want = _run(kind, arrays, "reference", "f16")
    got = _run(kind, arrays, "webgpu", "f16")
    _check(got, want, t * 2.0**-8)


@pytest.mark.parametrize("variant", ["stream1", "stream4"])
def test_stream_variants_give_each_invocation_several_units(gpu, monkeypatch, variant):
    """A layer wider than a workgroup's invocations: each owns two units (one of them
    past the layer's edge for some), and a batch that leaves the last workgroup's rows
    part empty."""
    monkeypatch.setenv(VARIANT_ENV, variant)
    arrays = _inputs("lstm", 5, 3, 300, seed=8)
    want = _run("lstm", arrays, "reference", "f64")
    got = _run("lstm", arrays, "webgpu", "f32")
    _check(got, want, 4 * 3 * (4 * 300 + 10) * 2.0**-24)


def test_unknown_variant_is_one_clear_error(gpu, monkeypatch):
    monkeypatch.setenv(VARIANT_ENV, "fastest")
    arrays = _inputs("lstm", 1, 2, 3, seed=0)
    with pytest.raises(DeviceError, match="not a recurrent kernel variant"):
        _run("lstm", arrays, "webgpu", "f32")


def test_each_variant_builds_its_own_kernels(gpu, monkeypatch):
    """The knob reaches the kernel builders: each variant's launches differ in text, the
    tiled ones take two dispatches per backward step and seq one launch each way."""
    from scellis.devices.base import View  # noqa: PLC0415

    arrays = _inputs("lstm", 2, 3, 8, seed=1)
    ts = [sc.tensor(a, device="webgpu") for a in arrays]
    y = ts[0].prim("lstm_seq", *ts[1:])
    views = [t.device_view for t in ts]
    texts = {}
    for variant in VARIANTS:
        monkeypatch.setenv(VARIANT_ENV, variant)
        fwd = gpu.encode("lstm_seq", views, [y.device_view], {})
        out = gpu.alloc(3 * 2 * 4 * 8 + 4 * 2 * 8, sc.f32)
        flat = View(out, (out.numel,), (1,), 0, sc.f32)
        bwd = gpu.encode(
            "lstm_seq_backward", [y.device_view, y.device_view, *views[2:]], [flat], {}
        )
        gpu.release(out)
        # seq: one launch each way; stream: W_hh^T's copy, then one launch each way;
        # step: one per step; tiled: two per backward step
        whole = variant == "seq" or variant in STREAM_ROWS
        assert len(fwd) == {"seq": 1}.get(variant, 2 if whole else 3)
        assert len(bwd) == (1 if whole else {"step": 3}.get(variant, 6))
        texts[variant] = fwd[-1][0].text()
    assert len(set(texts.values())) == len(VARIANTS)


def test_the_fast_tier_walks_small_lstm_layers_in_one_launch(gpu, monkeypatch):
    """Under fast an LSTM layer of up to 64 units takes ``seq``; on a GPU every tier
    walks an LSTM layer of up to 128 units over a training-sized batch in one launch
    each way (``stream1``), a wider layer, a larger batch and a GRU keep the tiled step
    kernels, and a software adapter the plain ones; the variant knob still decides when
    set."""
    monkeypatch.delenv(VARIANT_ENV, raising=False)
    limits = gpu.limits
    with choosing(KERNELS["fast"]):
        assert chosen_variant(limits, 4, False, 64) == "seq"
        assert chosen_variant(limits, 4, True, 64) == "seq"
        assert chosen_variant(limits, 4, False, 65) == NARROW_VARIANT
        assert chosen_variant(limits, 4, False, NARROW_MAX_H + 1) == DEFAULT_VARIANT
        assert chosen_variant(limits, 3, False, 16) == DEFAULT_VARIANT
        monkeypatch.setenv(VARIANT_ENV, "tiled")
        assert chosen_variant(limits, 4, False, 16) == "tiled"
    monkeypatch.delenv(VARIANT_ENV)
    for tier in ("debug", "prod"):
        with choosing(KERNELS[tier]):
            assert chosen_variant(limits, 4, False, 16) == NARROW_VARIANT
            assert chosen_variant(limits, 4, False, 16, NARROW_MAX_ROWS) == NARROW_VARIANT
            assert chosen_variant(limits, 4, False, 16, NARROW_MAX_ROWS + 1) == DEFAULT_VARIANT
            assert chosen_variant(limits, 4, False, 256) == DEFAULT_VARIANT
            assert chosen_variant(limits, 4, True, 16) == SOFTWARE_VARIANT
