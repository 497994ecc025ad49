"""The fused row norm's WGSL kernels: repeatable bits, limits that change nothing, torch.

The case table (test_case_table.py) holds every norm row to the reference device; here
the kernels' own promises: the same bits on every run (the ``debug`` tier), the same
bits when low limits split the operands into binding windows and make the grid loop over
the rows, and values and gradients within a few f32 ulps of the row's scale of torch's
layer norm (f64, CPU).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend
from scellis.ops.composites import layer_norm, rms_norm

pytestmark = pytest.mark.webgpu
# 64 KiB bindings and an 8 x 8 workgroup grid
LOW_LIMITS = {"max_storage_buffer_binding_size": 65536, "max_compute_workgroups_per_dimension": 8}
U = 2.0**-24


def _norm_and_grads(dev, x, w, b, g, rms):
    """y and the gradients of x, w (and b) on ``dev``, as host arrays."""
    xt, wt = (
        sc.tensor(x, device=dev, requires_grad=True),
        sc.tensor(w, device=dev, requires_grad=True),
    )
    bt = None if rms else sc.tensor(b, device=dev, requires_grad=True)
    y = rms_norm(xt, wt) if rms else layer_norm(xt, x.shape[-1], wt, bt)
    y.backward(sc.tensor(g, device=dev))
    out = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    return out if rms else out + [bt.grad.numpy()]


def _inputs(rng, rows, d):
    x = (rng.standard_normal((rows, d)) * 2 + 1).astype(np.float32)
    w, b = rng.standard_normal(d).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    return x, w, b, rng.standard_normal((rows, d)).astype(np.float32)


def _same_bits(a, b):
    for got, want in zip(a, b):
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("rms", [False, True])
def test_repeated_runs_give_the_same_bits(gpu, rng, rms):
    args = _inputs(rng, 9, 300)
    _same_bits(_norm_and_grads(gpu, *args, rms), _norm_and_grads(gpu, *args, rms))


@pytest.mark.parametrize("rms", [False, True])
def test_low_limits_give_the_same_bits(gpu, rng, rms):
    # 80 KB: two binding windows; 100 rows over a 64-workgroup grid, so the grid loops.
    # D = 200 keeps the weight's column sum on one path under both limits
    small = WebGPUBackend(gpu=gpu.gpu, limits=LOW_LIMITS)
    args = _inputs(rng, 100, 200)
    _same_bits(_norm_and_grads(small, *args, rms), _norm_and_grads(gpu, *args, rms))


@pytest.mark.parametrize("d", [1, 37, 256, 300])
def test_layer_norm_agrees_with_torch(gpu, rng, d):
    x, w, b, g = _inputs(rng, 5, d)
    got = _norm_and_grads(gpu, x, w, b, g, rms=False)
    tx, tw, tb = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, w, b))
    y = TF.layer_norm(tx, (d,), tw, tb, 1e-5)
    y.backward(torch.tensor(g, dtype=torch.float64))
    want = [y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()]
    for name, a, t in zip(("y", "dx", "dw", "db"), got, want):
        # a few ulps of the result's scale per row sum it went through (D terms each)
        scale = np.abs(t).max() + np.abs(g).max() * np.abs(w).max()
        assert np.abs(a - t).max() <= 8 * (d + 8) * U * scale, name
