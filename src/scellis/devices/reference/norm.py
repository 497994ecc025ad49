"""Reference kernels for the fused row norm (devices layer): the maths in NumPy, per row.

Layer norm's variance is taken about the mean (two passes, as the composite does);
f16 inputs compute in f32 (the backend rounds f16 results once, at the store), f64
inputs in f64.
"""

from __future__ import annotations

import numpy as np


def _widened(xs):
    return [np.asarray(a, np.float32 if a.dtype == np.float16 else a.dtype) for a in xs]


def _normalised(x, attrs):
    """xhat = (x - mean) * rstd (RMS: x * rstd) and rstd, per row of the last axis."""
    centred = x if attrs.get("rms") else x - x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt((centred * centred).mean(-1, keepdims=True) + attrs["eps"])
    return centred * rstd, rstd


def _forward(xs, attrs, out):
    x, *params = _widened(xs)
    y, _ = _normalised(x, attrs)
    if attrs.get("weight"):
        y = y * params.pop(0)
    if attrs.get("bias"):
        y = y + params.pop(0)
    return y


def _backward(xs, attrs, out):
    x, g, *params = _widened(xs)
    xhat, rstd = _normalised(x, attrs)
    gw = g * params[0] if attrs.get("weight") else g
    inner = gw - xhat * (gw * xhat).mean(-1, keepdims=True)
    if not attrs.get("rms"):
        inner = inner - gw.mean(-1, keepdims=True)
    parts = [(rstd * inner).reshape(-1)]
    if attrs.get("weight_grad"):
        parts.append((g * xhat).reshape(-1))
    return np.concatenate(parts)


KERNELS = {"row_norm": _forward, "row_norm_backward": _backward}
