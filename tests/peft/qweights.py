"""Weights that probe every corner of quantisation: each row scaled by its own power of
ten, int8 halfway points (v = max/2 and (j + 1/2) max / 127), NF4 values exactly on a
midpoint times a power-of-two block max, signed zeros, all-zero and subnormal rows."""

from __future__ import annotations

import numpy as np

from scellis.base.quant import NF4_MIDS


def hard_weight(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    scale = 10.0 ** rng.uniform(-12, 12, (rows, 1))
    w = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
    top = np.abs(w).max(axis=1, keepdims=True)
    halves = rng.random((rows, cols)) < 0.1
    w[halves] = np.broadcast_to(top / 2, w.shape)[halves] * np.sign(w[halves])
    # (j + 1/2) * max / 127 is exact where max is 127 times a power of two
    w[2] = np.float32(127.0 * 2.0**-3) * np.sign(w[2])
    w[2, 1:] = (np.arange(1, cols) % 127 + 0.5) * np.float32(2.0**-3) * np.sign(w[2, 1:])
    # NF4 midpoints (those exact in f32) under a block max of one
    mids = np.asarray(NF4_MIDS, np.float64)
    exact = mids[mids.astype(np.float32).astype(np.float64) == mids]
    w[3] = np.resize(np.concatenate([[1.0], exact]), cols).astype(np.float32)
    w[4] = 0.0
    w[4, ::3] = -0.0
    w[5] = (np.float32(2.0**-140) * rng.standard_normal(cols)).astype(np.float32)
    return w
