"""Scaled dot-product attention over given heads (catalog layer): softmax(q kᵀ s + mask) v.

The core of ``nn/attention`` without its projections, for graphs that make q, k and v
themselves (an imported ONNX graph: the op-level importer recognises the exporters'
MatMul, scale, mask, Softmax, MatMul chain as this block). It takes q [B, H, T, D],
kᵀ [B, H, D, S] (as the graphs hold it), v [B, H, S, D], or the same with the heads
merged into the batch ([B*H, T, D]), and an optional additive mask broadcastable to the
scores. The paths are ``nn/attention``'s: ``flash`` (one fused kernel, O(T) memory) when
no additive mask is given, on WebGPU under ``auto`` where its rule
(``attention.auto_takes_flash``) takes it; ``naive`` otherwise, where a row
every key of which is masked gives zeros (as the exporters' NaN guard does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ShapeError
from ...ops.attention import flash_attention
from ...ops.composites import softmax
from ...runtime.creation import arange
from ..registry import field, register
from .attention import ATTENTION_PATHS, auto_takes_flash
from .common import MASKED, Block


@dataclass(frozen=True)
class SDPAConfig:
    """Attention over heads a graph computed: no parameters."""

    scale: float = field(doc="factor on the scores q kᵀ (1/sqrt(D) in most models)", min=0)
    causal: bool = field(False, doc="query i sees keys 0..i only")
    attention: str = field(
        "auto", doc="naive, flash or auto (flash on webgpu, no mask)", choices=ATTENTION_PATHS
    )


class ScaledDotProductAttention(Block):
    """forward(q, kt, v, mask=None) -> [.., T, D]."""

    def forward(self, q, kt, v, mask=None):
        if q.ndim not in (3, 4) or kt.ndim != q.ndim or v.ndim != q.ndim:
            raise ShapeError(f"attention takes q, kᵀ, v of rank 3 or 4, got {q.shape}")
        c = self.config
        heads = math.prod(q.shape[:-2])  # B x H (or the merged batch)
        t, s = q.shape[-2], kt.shape[-1]
        auto = c.attention == "auto" and auto_takes_flash(q.device, heads, t, s, c.causal)
        flash = c.attention == "flash" or auto
        if flash and mask is None:
            merged = q.ndim == 3  # heads folded into the batch: one batch of them
            q4, k4, v4 = (t.unsqueeze(0) if merged else t for t in (q, kt.mT, v))
            y = flash_attention(q4, k4, v4.cast(q4.dtype), c.causal, c.scale).cast(v.dtype)
            return y.squeeze(0) if merged else y
        scores = (q @ kt) * c.scale
        if c.causal:
            T, S = scores.shape[-2:]
            i = arange(T, device=q.device).unsqueeze(-1)
            keep = arange(S, device=q.device).unsqueeze(0) <= i
            scores = scores.where(keep, MASKED)
        if mask is not None:
            scores = scores + mask
        w = softmax(scores, -1)
        if mask is not None:
            w = w.where(w.eq(w), 0.0)  # a fully masked row: NaN -> 0
        return w.cast(v.dtype) @ v


register(
    "nn/scaled_dot_product_attention", "block", SDPAConfig, ScaledDotProductAttention,
    builtin=True,
)  # fmt: skip
