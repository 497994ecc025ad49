"""Reference kernels for flash attention (devices layer): the maths in NumPy, per head.

The oracle materialises the scores per (b, h) — clarity over memory; the tiled,
O(T)-memory version is the WebGPU kernel, which is tested against this one. f16
inputs compute in f32 (the backend rounds f16 results once, at the store).
"""

from __future__ import annotations

import numpy as np

from ...ops.attention import attention_scale


def _probs(q, k, attrs):
    """Scaled scores' softmax p [B, H, T, S] and the rows' logsumexp [B, H, T]."""
    scale = attention_scale(attrs, q.shape[-1])
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    if attrs.get("causal"):
        t, n = s.shape[-2:]
        keep = np.arange(n)[None, :] <= np.arange(t)[:, None]
        s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    return e / total, (m + np.log(total))[..., 0], scale


def _widened(xs):
    return [np.asarray(a, np.float32 if a.dtype == np.float16 else a.dtype) for a in xs]


def _forward(xs, attrs, out):
    q, k, v = _widened(xs)
    p, lse, _ = _probs(q, k, attrs)
    return np.concatenate([np.matmul(p, v), lse[..., None]], axis=-1)


def _backward(xs, attrs, out):
    q, k, v, y, gy = _widened(xs)
    d = q.shape[-1]
    p, _, scale = _probs(q, k, attrs)
    go, glse = gy[..., :d], gy[..., d]
    dv = np.matmul(np.swapaxes(p, -1, -2), go)
    dp = np.matmul(go, np.swapaxes(v, -1, -2))
    delta = (go * y[..., :d]).sum(-1) - glse  # d lse / d s = p folds into the row shift
    ds = p * (dp - delta[..., None])
    dq = np.matmul(ds, k) * scale
    dk = np.matmul(np.swapaxes(ds, -1, -2), q) * scale
    return np.concatenate([dq.reshape(-1), dk.reshape(-1), dv.reshape(-1)])


KERNELS = {"flash_attention": _forward, "flash_attention_backward": _backward}
