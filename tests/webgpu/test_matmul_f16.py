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
