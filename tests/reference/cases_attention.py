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


CASES = [
    Case("flash_attention", sc_flash(), torch_flash(), _qkv(2, 2, 5, 5, 3)),
    Case("flash_attention_causal", sc_flash(True), torch_flash(True), _qkv(1, 2, 6, 6, 4)),
    # cross attention (T != S) with an explicit scale; causal with more queries than keys
    Case(
        "flash_attention_cross", sc_flash(False, 0.7), torch_flash(False, 0.7), _qkv(2, 1, 3, 7, 2)
    ),
    Case("flash_attention_causal_t>s", sc_flash(True), torch_flash(True), _qkv(1, 1, 6, 4, 3, 1.5)),
]
