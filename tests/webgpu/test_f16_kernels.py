"""The kernels a mixed_f16 step runs on f16 storage, against torch in float64 on the same
f16 values: the fused row norms (layer and RMS, forward and backward) and GELU with its
gradient. Each reads f16 widened to f32, computes in f32 and rounds once to f16 at its
store, so every result sits within a few f16 half-ulps of the row's (or tensor's) scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import scellis as sc
from scellis.ops.composites import layer_norm, rms_norm

pytestmark = pytest.mark.webgpu
HALF_ULP = 2.0**-11  # f16's unit roundoff
TINY = 2.0**-24  # f16's smallest subnormal: the spacing of every value below 2^-14


def _within(got, want, scale, what: str, ulps: float = 4.0):
    assert got.dtype == np.float16, what
    err = np.abs(got.astype(np.float64) - want)
    bound = ulps * HALF_ULP * scale + TINY
    assert np.all(err <= bound), f"{what}: worst err / bound {np.max(err / bound):.3f}"


def _f16(rng, shape, scale=1.0, shift=0.0):
    return (rng.standard_normal(shape) * scale + shift).astype(np.float16)


@pytest.mark.parametrize("rms", [False, True])
def test_row_norm_in_f16_follows_torch(gpu, rng, rms):
    assert gpu.info.has_f16, "f16 storage needs shader-f16"
    rows, d = 12, 96
    x, g = _f16(rng, (rows, d), 2.0, 1.0), _f16(rng, (rows, d))
    w, b = _f16(rng, (d,)), _f16(rng, (d,))
    xt, wt = (sc.tensor(v, device=gpu, requires_grad=True) for v in (x, w))
    bt = None if rms else sc.tensor(b, device=gpu, requires_grad=True)
    y = rms_norm(xt, wt) if rms else layer_norm(xt, d, wt, bt)
    y.backward(sc.tensor(g, device=gpu))

    tx, tw, tb = (torch.tensor(v.astype(np.float64), requires_grad=True) for v in (x, w, b))
    if rms:
        ty = tx * torch.rsqrt((tx * tx).mean(-1, keepdim=True) + 1e-6) * tw
    else:
        ty = TF.layer_norm(tx, (d,), tw, tb, eps=1e-5)
    ty.backward(torch.tensor(g.astype(np.float64)))

    def rows_scale(t):  # each row's largest magnitude, broadcast over the row
        return np.abs(t).max(axis=-1, keepdims=True)

    want_y = ty.detach().numpy()
    _within(y.detach().numpy(), want_y, rows_scale(want_y), "y")
    want_dx = tx.grad.numpy()
    _within(xt.grad.numpy(), want_dx, rows_scale(want_dx), "dx", ulps=8.0)
    want_dw = tw.grad.numpy()
    _within(wt.grad.numpy(), want_dw, np.abs(want_dw).max(), "dw", ulps=8.0)
    if not rms:
        want_db = tb.grad.numpy()
        _within(bt.grad.numpy(), want_db, np.abs(want_db).max(), "db", ulps=8.0)


def test_gelu_in_f16_follows_torch(gpu, rng):
    x, g = _f16(rng, (40, 33), 3.0), _f16(rng, (40, 33))
    xt = sc.tensor(x, device=gpu, requires_grad=True)
    y = xt.gelu()
    y.backward(sc.tensor(g, device=gpu))
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    ty = TF.gelu(tx)
    ty.backward(torch.tensor(g.astype(np.float64)))
    want = ty.detach().numpy()
    _within(y.detach().numpy(), want, np.abs(want), "gelu", ulps=2.0)
    want_dx = tx.grad.numpy()
    _within(xt.grad.numpy(), want_dx, np.abs(want_dx) + np.abs(g), "gelu dx", ulps=4.0)
