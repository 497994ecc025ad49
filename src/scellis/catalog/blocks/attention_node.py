"""Self-attention's projections and naive core as one tape node (catalog layer).

q, k and v project from one matmul against the three weights packed (their rows
concatenated), the heads are split as views of that one result, and the scores,
scale, mask, softmax, weighted sum and head merge follow, as ``attention.attend``
computes them. On the tape it is one node whose VJP is written out: the softmax's
backward, the two score matmuls', and one matmul each for the input's and the packed
weights' gradients. Op by op the block took about fifteen nodes (three dense layers,
six head views, the scores' matmul, scale, mask, softmax, weighted sum and merge) and
as many VJPs, whose Python cost was most of a small attention layer's step.

The values are the same sums as the separate path's; the packed matmul and the
summed input gradient may round differently in the last place.
"""

from __future__ import annotations

from ...ops.composites import softmax
from ...runtime.primitive import apply_with_vjp
from .common import MASKED


def packed_self_attention(x, weights: tuple, biases: tuple | None, heads: int, scale: float,
                          keep):  # fmt: skip
    """softmax(q kᵀ scale, masked where ``keep`` is False) v over ``heads`` heads, merged
    back to [B, T, heads * D]; q, k, v = x Wᵢᵀ + bᵢ for x [B, T, E] and the three
    [heads * D, E] ``weights`` (``biases`` the three biases, or None)."""
    inputs = (x, *weights) if biases is None else (x, *weights, *biases)
    attrs = {"heads": heads, "scale": scale, "keep": keep}
    wants_w = any(t.requires_grad for t in weights + (biases or ()))
    reads = (wants_w,) + (False,) * (len(inputs) - 1)  # the weights' packed copy is saved
    return apply_with_vjp("self_attention", inputs, _forward, _vjp, attrs, reads, saves=True)


def _forward(x, wq, wk, wv, bq=None, bk=None, bv=None, *, heads, scale, keep):
    B, T, E = x.shape
    W = wq.cat([wk, wv], 0)  # [3 H D, E]
    y = x.reshape(-1, E) @ W.mT
    if bq is not None:
        y = y + bq.cat([bk, bv], 0)
    D = wq.shape[0] // heads
    qkv = y.reshape(B, T, 3, heads, D).permute(2, 0, 3, 1, 4)  # [3, B, H, T, D], views
    q, k, v = qkv[0], qkv[1], qkv[2]
    scores = (q @ k.mT) * scale
    if keep is not None:
        scores = scores.where(keep, MASKED)
    w = softmax(scores, -1)
    out = (w @ v).permute(0, 2, 1, 3).reshape(B, T, heads * D)
    return out, {"W": W, "q": q, "k": k, "v": v, "w": w}


def _vjp(node, g):
    s, a = node.saved, node.attrs
    q, k, v, w, W = s["q"], s["k"], s["v"], s["w"], s["W"]
    B, H, T, D = q.shape
    gm = g.reshape(B, T, H, D).permute(0, 2, 1, 3)  # [B, H, T, D]
    gw = gm @ v.mT
    gv = w.mT @ gm
    gs = w * (gw - (gw * w).sum(-1, keepdim=True))  # the softmax's backward
    if a["keep"] is not None:
        gs = gs.where(a["keep"], 0.0)
    gs = gs * a["scale"]
    gq, gk = gs @ k, gs.mT @ q
    # the three heads' gradients side by side as the packed projection's [B T, 3 H D]
    parts = [t.permute(0, 2, 1, 3).unsqueeze(2) for t in (gq, gk, gv)]
    G = parts[0].cat(parts[1:], 2).reshape(B * T, 3 * H * D)
    needs = node.needs
    x = node.inputs[0]
    gx = (G @ W).reshape(x.shape) if needs[0] else None
    n = H * D
    grads = [gx]
    if any(needs[1:4]):
        gW = G.mT @ x.detach().reshape(B * T, x.shape[-1])
        grads += [gW[i * n : (i + 1) * n] for i in range(3)]
    else:
        grads += [None] * 3
    if len(needs) > 4:
        if any(needs[4:]):
            gb = G.sum(0)
            grads += [gb[i * n : (i + 1) * n] for i in range(3)]
        else:
            grads += [None] * 3
    return tuple(grads)
