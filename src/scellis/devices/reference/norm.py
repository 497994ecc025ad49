"""Reference kernels for the fused row norm (devices layer): the maths in NumPy, per row.

Layer norm's variance is taken about the mean (two passes, as the composite does);
f16 inputs compute in f32 (the backend rounds f16 results once, at the store), f64
inputs in f64.

A row mean is ``np.add.reduce`` then a division by the width: the values ``ndarray.mean``
gives (the same sum, the same division), without its Python wrapper, which cost more
than the arithmetic on a Transformer's rows. Whole-array temporaries are reused in
place (``out=``) where nothing else holds them.
"""

from __future__ import annotations

import numpy as np


def _widened(xs):
    return [np.asarray(a, np.float32 if a.dtype == np.float16 else a.dtype) for a in xs]


def _row_mean(x):
    return np.divide(np.add.reduce(x, -1, keepdims=True), x.shape[-1])


def _normalised(x, attrs):
    """xhat = (x - mean) * rstd (RMS: x * rstd) and rstd, per row of the last axis."""
    centred = x if attrs.get("rms") else x - _row_mean(x)
    var = _row_mean(centred * centred)
    var += attrs["eps"]
    rstd = np.divide(1.0, np.sqrt(var, out=var), out=var)
    if centred is x:
        return x * rstd, rstd
    return np.multiply(centred, rstd, out=centred), rstd


def _forward(xs, attrs, out):
    x, *params = _widened(xs)
    y, _ = _normalised(x, attrs)
    if attrs.get("weight"):
        y *= params.pop(0)
    if attrs.get("bias"):
        y += params.pop(0)
    return y


def _backward(xs, attrs, out):
    x, g, *params = _widened(xs)
    xhat, rstd = _normalised(x, attrs)
    gw = g * params[0] if attrs.get("weight") else g
    n = x.shape[-1]
    flat = np.empty(x.size * (2 if attrs.get("weight_grad") else 1), xhat.dtype)
    dx = flat[: x.size].reshape(x.shape)
    # dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), the terms in that order
    np.multiply(gw, xhat, out=dx)
    proj = np.divide(np.add.reduce(dx, -1, keepdims=True), n)
    np.multiply(xhat, proj, out=dx)
    np.subtract(gw, dx, out=dx)
    if not attrs.get("rms"):
        dx -= np.divide(np.add.reduce(gw, -1, keepdims=True), n)
    dx *= rstd
    if attrs.get("weight_grad"):
        np.multiply(g, xhat, out=flat[x.size :].reshape(x.shape))
    return flat


KERNELS = {"row_norm": _forward, "row_norm_backward": _backward}
