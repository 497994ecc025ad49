"""VJP rule of flash attention (autograd layer): one backward primitive, then views.

The backward op recomputes the score tiles from q, k and the saved logsumexp, so the
tape keeps only the packed forward result [B, H, T, D + 1] — O(T) per head beyond
the output itself, never the T x S probabilities.
"""

from __future__ import annotations

ATTENTION_SAVES = frozenset({"flash_attention"})


def _flash_attention(node, g):
    q, k, v = node.inputs
    y = node.saved["out"]
    b, h, t, d = q.shape
    s = k.shape[2]
    flat = q.detach().prim(
        "flash_attention_backward", k.detach(), v.detach(), y, g.contiguous(), **node.attrs
    )
    nq, nk = b * h * t * d, b * h * s * d
    dq = flat[0:nq].reshape(b, h, t, d)
    dk = flat[nq : nq + nk].reshape(b, h, s, d)
    dv = flat[nq + nk : nq + 2 * nk].reshape(b, h, s, d)
    return dq, dk, dv


ATTENTION_VJP = {"flash_attention": _flash_attention}
ATTENTION_READS: dict = {}  # q, k and v are all read: the backward recomputes the scores
