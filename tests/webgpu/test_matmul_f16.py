"""The REGS tiles that stage f16 operands as f16 (``half_shared``): within the f16 bound
of a float64 NumPy product, and bitwise equal to their f32-staged twins (widening an f16
value is exact, and the sums run in the same order), through vec4 and scalar loads,
transposed and offset views, batches."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu.kernels.matmul import REGS
from scellis.runtime.dispatch import apply

pytestmark = [pytest.mark.webgpu]

# each half-staged tile and the f32-staged tile it must agree with bit for bit
TWINS = {"r128h": "r128", "r128x64h": "r128x64", "r64h": "r64"}
SHAPES = [
    # (A shape, B shape, A transposed, B transposed)
    ((70, 36), (36, 132), False, False),  # vec4 loads
    ((33, 9), (9, 41), False, True),  # scalar loads (sizes not multiples of 4)
    ((2, 3, 40, 36), (2, 3, 36, 70), True, True),
]


def _f16(rng, shape, transposed: bool, gpu):
    """An f16 operand (NumPy, float64 copy, device tensor), stored transposed if asked."""
    stored = shape[:-2] + shape[-2:][::-1] if transposed else shape
    x = rng.standard_normal(stored).astype(np.float16)
    t = sc.tensor(x, device=gpu)
    if transposed:
        x, t = np.swapaxes(x, -1, -2), t.mT
    return x, x.astype(np.float64), t


def _np(t) -> np.ndarray:
    return t.numpy()


@pytest.mark.parametrize("sa,sb,ta,tb", SHAPES)
def test_half_staged_tiles_match_their_twins_and_numpy(gpu, rng, sa, sb, ta, tb):
    assert gpu.info.has_f16, "the f16 tiles need shader-f16"
    _, a64, da = _f16(rng, sa, ta, gpu)
    _, b64, db = _f16(rng, sb, tb, gpu)
    want = a64 @ b64
    k = sa[-1]
    bound = k * 2.0**-23 * (np.abs(a64) @ np.abs(b64)) + 2.0**-11 * np.abs(want)
    for half, twin in TWINS.items():
        assert REGS[half].fits(gpu.limits) and REGS[twin].fits(gpu.limits)
        got = _np(apply("matmul", (da, db), _tile=half))
        assert got.dtype == np.float16
        err = np.abs(got.astype(np.float64) - want)
        assert np.all(err <= bound), f"{half}: worst err/bound {np.max(err / bound):.3f}"
        np.testing.assert_array_equal(got, _np(apply("matmul", (da, db), _tile=twin)))


def test_half_staged_tile_on_offset_views_and_f32_operands(gpu, rng):
    # a misaligned slice takes the scalar loaders
    x = rng.standard_normal((90, 70)).astype(np.float16)
    y = rng.standard_normal((75, 81)).astype(np.float16)
    dx, dy = sc.tensor(x, device=gpu), sc.tensor(y, device=gpu)
    da, db = dx[1:, 2:67], dy[3:68, 1:]
    got = _np(apply("matmul", (da, db), _tile="r128h"))
    np.testing.assert_array_equal(got, _np(apply("matmul", (da, db), _tile="r128")))
    want = x[1:, 2:67].astype(np.float64) @ y[3:68, 1:].astype(np.float64)
    assert np.max(np.abs(got - want)) <= 2.0**-9 * np.max(np.abs(want))
    # f32 operands run the tile as its f32 twin does
    fa, fb = (sc.tensor(v.astype(np.float32), device=gpu) for v in (x[1:, 2:67], y[3:68, 1:]))
    np.testing.assert_array_equal(
        _np(apply("matmul", (fa, fb), _tile="r128h")), _np(apply("matmul", (fa, fb), _tile="r128"))
    )


# the tiles that also multiply in f16 and the f32-staged twin whose shapes they share
HALF_MATH = {"r128hm": "r128", "r128x64hm": "r128x64", "r64hm": "r64"}


@pytest.mark.parametrize("sa,sb,ta,tb", SHAPES + [((40, 300), (300, 70), False, False)])
def test_half_math_tiles_within_their_bound(gpu, rng, sa, sb, ta, tb):
    """Each K-block of 16 products is summed in f16 (at most 16 f16 roundings of a sum
    no larger than the block's sum of |a*b|), the blocks in f32: first order,
    ``|C - A@B| <= (16 u16 + K u32) |A|@|B| + u16 |C|`` with u16 = 2^-11, u32 = 2^-24."""
    _, a64, da = _f16(rng, sa, ta, gpu)
    _, b64, db = _f16(rng, sb, tb, gpu)
    want, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    k = sa[-1]
    bound = (16 * 2.0**-11 + k * 2.0**-23) * mag + 2.0**-11 * np.abs(want)
    for tile, twin in HALF_MATH.items():
        got = _np(apply("matmul", (da, db), _tile=tile)).astype(np.float64)
        err = np.abs(got - want)
        assert np.all(err <= bound), f"{tile}: worst err/bound {np.max(err / bound):.3f}"
        # f16 products round where the twin's f32 ones do not: the mean error is larger
        twin_err = np.abs(_np(apply("matmul", (da, db), _tile=twin)).astype(np.float64) - want)
        assert np.mean(err) >= np.mean(twin_err)


def test_half_math_tiles_run_f32_operands_as_their_twins(gpu, rng):
    a = sc.tensor(rng.standard_normal((70, 36)).astype(np.float32), device=gpu)
    b = sc.tensor(rng.standard_normal((36, 132)).astype(np.float32), device=gpu)
    for tile, twin in HALF_MATH.items():
        np.testing.assert_array_equal(
            _np(apply("matmul", (a, b), _tile=tile)), _np(apply("matmul", (a, b), _tile=twin))
        )


def test_reordered_f16_products_multiply_in_f16_on_hardware_only(gpu, rng, monkeypatch):
    """The tiers that allow another rounding (``_order``) take the f16-math twin for f16
    operands on a hardware adapter, and keep f32 math without ``_order`` (debug) and on
    a software adapter, where f16 arithmetic is emulated."""
    from scellis.devices.webgpu import WebGPUBackend
    from scellis.devices.webgpu.kernels import matmul
    from scellis.devices.webgpu.kernels.common import Source

    monkeypatch.setattr(matmul, "HALF_MATH", True)
    a = rng.standard_normal((512, 512)).astype(np.float16)
    b = rng.standard_normal((512, 512)).astype(np.float16)
    da, db = sc.tensor(a, device=gpu), sc.tensor(b, device=gpu)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    fixed = _np(apply("matmul", (da, db)))
    assert gpu.info.software  # lavapipe: the order alone does not change the kernel
    np.testing.assert_array_equal(fixed, _np(apply("matmul", (da, db), _order="split_k")))
    # a backend of its own, built as for a hardware adapter (no launch kept from above)
    hw = WebGPUBackend(gpu=gpu.gpu)
    monkeypatch.setattr(hw, "_source", lambda: Source(hw.limits, hw.info.has_f16))
    da, db = sc.tensor(a, device=hw), sc.tensor(b, device=hw)
    np.testing.assert_array_equal(fixed, _np(apply("matmul", (da, db))))
    half = _np(apply("matmul", (da, db), _order="split_k")).astype(np.float64)
    assert not np.array_equal(half, fixed)
    bound = (16 * 2.0**-11 + 512 * 2.0**-23) * mag + 2.0**-11 * np.abs(want)
    assert np.all(np.abs(half - want) <= bound)
    assert np.mean(np.abs(half - want)) > 1.5 * np.mean(np.abs(fixed - want))
