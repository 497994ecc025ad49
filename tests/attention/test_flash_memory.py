"""Flash attention's memory, measured by the WebGPU allocator's peak, against the naive path.

Forward and backward of causal attention over q, k, v [1, 2, T, 16] at T = 64, 128,
256. The naive path holds [1, 2, T, T] scores, probabilities and their gradients, so
its peak grows as T^2; the flash path holds per row only the output and one
logsumexp, so its peak grows as T. Measured (lavapipe), peak above the inputs' baseline:
naive 0.40 / 1.56 / 6.13 MB, flash 74 / 148 / 295 KB.
"""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.ops.attention import flash_attention
from scellis.ops.composites import softmax

pytestmark = pytest.mark.webgpu

H, D = 2, 16
SIZES = (64, 128, 256)


def _naive(q, k, v):
    t = q.shape[2]
    s = (q @ k.mT) * (1.0 / D**0.5)
    i = sc.arange(t, device=q.device).unsqueeze(-1)
    j = sc.arange(t, device=q.device).unsqueeze(0)
    return softmax(s.where(j <= i, -3.4e38), -1) @ v


def _flash(q, k, v):
    return flash_attention(q, k, v, causal=True)


def _peak(gpu, fn, t: int, rng) -> tuple[int, np.ndarray]:
    """Peak bytes above the live baseline over a forward + backward, and dq."""
    qkv = [
        sc.tensor(rng.standard_normal((1, H, t, D)), device=gpu, dtype="f32", requires_grad=True)
        for _ in range(3)
    ]
    g = sc.tensor(rng.standard_normal((1, H, t, D)), device=gpu, dtype="f32")
    gpu.sync()
    base = gpu.memory()["live_bytes"]
    gpu.reset_peak()
    fn(*qkv).backward(g)
    peak = gpu.memory()["peak_bytes"] - base
    return peak, np.asarray(qkv[0].grad.tolist())


def test_flash_peak_grows_linearly_naive_quadratically(gpu):
    naive, flash = {}, {}
    for t in SIZES:
        seed = np.random.default_rng(t)
        n_peak, n_dq = _peak(gpu, _naive, t, np.random.default_rng(t))
        f_peak, f_dq = _peak(gpu, _flash, t, seed)
        naive[t], flash[t] = n_peak, f_peak
        # same inputs, same maths: the gradients agree
        assert np.abs(f_dq - n_dq).max() <= 1e-5 * max(1.0, np.abs(n_dq).max())
    for a, b in zip(SIZES, SIZES[1:]):
        # doubling T: flash's peak at most doubles (plus pool rounding), naive's ~quadruples
        assert flash[b] <= 2.2 * flash[a], flash
        assert naive[b] >= 3.5 * naive[a], naive
    scores_bytes = H * SIZES[-1] ** 2 * 4
    # the whole flash working set at T=256 is smaller than ONE score matrix of that size
    assert flash[SIZES[-1]] < scores_bytes < naive[SIZES[-1]]
