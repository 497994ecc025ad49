"""torch's MultiheadAttention options beyond the catalog block (nn layer): keys and values
of other widths (``kdim``/``vdim``), a learned key/value appended to every sequence
(``add_bias_kv``) and a zero one per head (``add_zero_attn``).

The appended key/value are ``bias_k``/``bias_v`` [1, 1, E]. Each appended position adds a column to
the masks that attends, as in torch.
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..catalog import blocks as B
from ..runtime.functional import cat
from . import init
from ._home import constant_param


def widen_kv(mha, kdim: int, vdim: int) -> None:
    """Give ``mha``'s key and value projections inputs of ``kdim``/``vdim`` features,
    each weight xavier-uniform over its own shape, as torch draws them apart."""
    E = mha.config.embed_dim
    bias = mha.config.bias
    for name, width in (("q", E), ("k", kdim), ("v", vdim)):
        bound = math.sqrt(6.0 / (E + width))
        lin = B.Linear(B.LinearConfig(width, E, bias), **mha.ctx, weight_bound=bound,
                       bias_value=0.0)  # fmt: skip
        setattr(mha, name, lin)


def add_bias_kv(mha, device=None, dtype=None) -> None:
    E = mha.embed_dim
    for name in ("bias_k", "bias_v"):
        t = constant_param((1, 1, E), 0.0, device, dtype)
        with no_grad():
            init.xavier_normal_(t)
        setattr(mha, name, t)


def _pad_column(mask):
    """A mask with one more key column that attends (False, or 0.0 added)."""
    if mask is None:
        return None
    return cat([mask, mask.new_zeros(*mask.shape[:-1], 1)], -1)


def append_bias(k, v, bias_k, bias_v, attn_mask, padding):
    """k, v [B, S, E] with the learned key/value as position S."""
    B, _, E = k.shape
    k = cat([k, bias_k.expand(B, 1, E)], 1)
    v = cat([v, bias_v.expand(B, 1, E)], 1)
    return k, v, _pad_column(attn_mask), _pad_column(padding)


def append_zeros(k, v, attn_mask, padding):
    """k, v [B, H, S, D] with a zero key/value as position S of every head."""
    B, H, _, D = k.shape
    zero = k.new_zeros(B, H, 1, D)
    return cat([k, zero], 2), cat([v, zero], 2), _pad_column(attn_mask), _pad_column(padding)
