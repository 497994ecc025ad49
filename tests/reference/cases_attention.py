"""Op cases, attention family: flash attention vs torch's scaled_dot_product_attention.

The packed result's logsumexp column is compared too (torch.logsumexp of the scaled,
masked scores), so the row's cotangent reaches it and its gradient path is checked.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as TF

from helpers import Case
from inputs import N
from scellis.runtime.dispatch import apply


def torch_flash(causal=False, scale=None):
    def fn(q, k, v):
        d = q.shape[-1]
        sc = 1.0 / math.sqrt(d) if scale is None else scale
        out = TF.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sc)
        s = q @ k.transpose(-1, -2) * sc
        if causal:
            keep = torch.ones(s.shape[-2:], dtype=torch.bool).tril()
            s = s.masked_fill(~keep, float("-inf"))
        return torch.cat([out, torch.logsumexp(s, -1, keepdim=True)], -1)

    return fn


def sc_flash(causal=False, scale=None):
    return lambda q, k, v: apply("flash_attention", (q, k, v), causal=causal, scale=scale)


def _qkv(b, h, t, s, d, scale=1.0):
    return [N((b, h, t, d), scale), N((b, h, s, d), scale), N((b, h, s, d))]


def heads_last(fn):
    """``fn`` on q, k, v given as [B, T, H, D] and seen as [B, H, T, D]: strided views,
    as the attention block's permuted projections arrive."""
    return lambda q, k, v: fn(*(x.permute(0, 2, 1, 3) for x in (q, k, v)))


# FD over thousands of inputs would take minutes; the small rows above check the VJP by
# finite differences, these hold the kernels' tiling (several tiles, partial last
# tiles, D not a multiple of 4 or of a tile, strided views) to torch and the reference
NO_FD = frozenset({"no_fd"})
TILED = [
    # rows past a 64-row tile, several key tiles, causal
    Case("flash_attention_t70_d64_causal", sc_flash(True), torch_flash(True),
         _qkv(1, 2, 70, 70, 64, 0.5), tags=NO_FD),
    # cross attention S != T, D = 32
    Case("flash_attention_t37_s53_d32", sc_flash(), torch_flash(), _qkv(2, 1, 37, 53, 32),
         tags=NO_FD),
    # D = 80 (20 vec4 groups), causal with fewer keys than queries
    Case("flash_attention_t20_s9_d80_causal", sc_flash(True), torch_flash(True),
         _qkv(1, 1, 20, 9, 80, 0.5), tags=NO_FD),
    # D = 6 (padded to 8 inside), permuted views
    Case("flash_attention_heads_last_d6_causal", heads_last(sc_flash(True)),
         heads_last(torch_flash(True)),
         [N((2, 19, 3, 6)), N((2, 19, 3, 6)), N((2, 19, 3, 6))], tags=NO_FD),
    # from 128 queries and keys the backward runs through the matmul kernel
    # (attention_split): causal bands over two 128-row blocks and a partial third
    Case("flash_attention_t300_d16_causal", sc_flash(True), torch_flash(True),
         _qkv(1, 2, 300, 300, 16, 0.5), tags=NO_FD),
    # more keys than queries, causal; D = 20 (scalar loads of dO, strided by D + 1)
    Case("flash_attention_t130_s260_d20_causal", sc_flash(True), torch_flash(True),
         _qkv(1, 1, 130, 260, 20, 0.5), tags=NO_FD),
    # permuted views, no mask, two batch rows of three heads
    Case("flash_attention_heads_last_t144_d8", heads_last(sc_flash()), heads_last(torch_flash()),
         [N((2, 144, 3, 8)), N((2, 144, 3, 8)), N((2, 144, 3, 8))], tags=NO_FD),
]  # fmt: skip


CASES = [
    Case("flash_attention", sc_flash(), torch_flash(), _qkv(2, 2, 5, 5, 3)),
    Case("flash_attention_causal", sc_flash(True), torch_flash(True), _qkv(1, 2, 6, 6, 4)),
    # cross attention (T != S) with an explicit scale; causal with more queries than keys
    Case(
        "flash_attention_cross", sc_flash(False, 0.7), torch_flash(False, 0.7), _qkv(2, 1, 3, 7, 2)
    ),
    Case("flash_attention_causal_t>s", sc_flash(True), torch_flash(True), _qkv(1, 1, 6, 4, 3, 1.5)),
] + TILED
