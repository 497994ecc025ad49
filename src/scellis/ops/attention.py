"""Fused attention primitives (ops layer): flash attention forward and its backward.

``flash_attention(q, k, v; causal, scale)``: q [B, H, T, D], k and v [B, H, S, D].
The result packs, per query row, the attention output and the row's logsumexp:
Y [B, H, T, D + 1] with Y[..., :D] = softmax(scale * q k^T (masked)) v and
Y[..., D] = logsumexp of the scaled (masked) scores. The forward never holds the
T x S score matrix: it walks the keys in tiles with an online softmax, so the only
per-row state that outlives it is that one logsumexp. A backend may hold the scores of
a bounded number of heads at a time in the backward (WebGPU does, to run its products
through the matmul kernel; its memory plan counts that storage).

``causal`` keeps key j for query i iff j <= i (torch's ``is_causal``, top-left
aligned); key 0 is always kept, so no row is ever fully masked. ``scale`` defaults to
1 / sqrt(D).

``flash_attention_backward(q, k, v, y, gy; causal, scale)`` recomputes the scores
from (q, k, v) and the saved logsumexp and returns one flat buffer
``[dq (B*H*T*D) | dk (B*H*S*D) | dv (B*H*S*D)]``. The gradient reaching the
logsumexp column is honoured too (d lse / d s = p), so the op is a true VJP of its
packed result.

f16 q, k, v (mixed precision) give an f32 packed result: the backward's probabilities
are exp(s - lse), and an lse rounded to f16 would put a relative error of |lse| 2^-11
on every one of them. The gradients come back in q's dtype.
"""

from __future__ import annotations

import math

from ..base.dtypes import f16, f32
from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register


def _dims(q: Spec, k: Spec, v: Spec):
    if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
        raise ShapeError(
            f"flash_attention takes q, k, v of rank 4, got {q.shape}, {k.shape}, {v.shape}"
        )
    b, h, t, d = q.shape
    s = k.shape[2]
    if k.shape != (b, h, s, d) or v.shape != (b, h, s, d):
        raise ShapeError(
            f"flash_attention: k and v must be {(b, h, 'S', d)} for q {q.shape}, "
            f"got {k.shape} and {v.shape}"
        )
    if s < 1:
        raise ShapeError("flash_attention needs at least one key")
    if len({q.dtype, k.dtype, v.dtype}) != 1 or not q.dtype.is_float:
        raise DTypeError("flash_attention needs float q, k, v of one dtype")
    return b, h, t, s, d


def _forward(specs, attrs):
    b, h, t, _, d = _dims(*specs)
    return [Spec((b, h, t, d + 1), packed_dtype(specs[0].dtype))]


def packed_dtype(dtype):
    """The packed (output, logsumexp) result's dtype for inputs of ``dtype``."""
    return f32 if dtype == f16 else dtype


def _backward(specs, attrs):
    q, k, v, y, gy = specs
    b, h, t, s, d = _dims(q, k, v)
    if y.shape != (b, h, t, d + 1) or gy.shape != y.shape or y.dtype != packed_dtype(q.dtype):
        raise ShapeError("flash_attention_backward: y and gy must be the forward's packed result")
    return [Spec((b * h * t * d + 2 * b * h * s * d,), q.dtype)]


def attention_scale(attrs: dict, d: int) -> float:
    """The score scale an op's attrs ask for (1 / sqrt(D) when not given)."""
    scale = attrs.get("scale")
    return 1.0 / math.sqrt(d) if scale is None else float(scale)


def flash_attention(q, k, v, causal: bool = False, scale: float | None = None):
    """softmax(scale * q k^T) v over [B, H, T, D] without the T x S scores; [B, H, T, D]."""
    y = q.prim("flash_attention", k, v, causal=bool(causal), scale=scale)
    return y[..., 0 : q.shape[-1]]


register(
    OpDef(
        "flash_attention",
        "attention",
        3,
        _forward,
        attrs=("causal", "scale"),
        diff_inputs=(0, 1, 2),
        doc="tiled attention with online softmax; packs (output, logsumexp) per query row",
    )
)
register(
    OpDef(
        "flash_attention_backward",
        "attention",
        5,
        _backward,
        attrs=("causal", "scale"),
        doc="flash attention's VJP, recomputing score tiles from q, k and the logsumexp",
    )
)
