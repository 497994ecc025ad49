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
from ...runtime.primitive import apply_with_vjp, unrecorded_view
from .common import MASKED, fuses_dense


def packed_self_attention(x, weights: tuple, biases: tuple | None, heads: int, scale: float,
                          keep, guard: bool, causal: bool | None = None):  # fmt: skip
    """softmax(q kᵀ scale, masked where ``keep`` is False) v over ``heads`` heads, merged
    back to [B, T, heads * D]; q, k, v = x Wᵢᵀ + bᵢ for x [B, T, E] and the three
    [heads * D, E] ``weights`` (``biases`` the three biases, or None), or one packed
    [3 heads * D, E] weight (and one packed bias) as torch's ``in_proj_weight`` holds
    them: it enters the node as it is, so its gradient is one matmul, not three row
    slices' each padded to the whole. ``guard``: the
    mask may hide every key of some row (a padding mask); where each row keeps a key
    (a causal mask alone), the masked weights are exactly 0 and so are their
    gradients, without the mask's op in backward. ``causal`` not None: the core is the
    ``flash_attention`` primitive (no ``keep``: unmasked or causal), one op each way."""
    inputs = (x, *weights) if biases is None else (x, *weights, *biases)
    parts = len(weights)
    attrs = {"heads": heads, "scale": scale, "keep": keep, "guard": guard and keep is not None,
             "parts": parts}  # fmt: skip
    if causal is not None:
        attrs = {"heads": heads, "scale": scale, "causal": causal, "parts": parts}
        return apply_with_vjp("self_attention", inputs, _forward_fused, _vjp_fused, attrs,
                              _reads(inputs), saves=True)  # fmt: skip
    return apply_with_vjp("self_attention", inputs, _forward, _vjp, attrs, _reads(inputs),
                          saves=True)  # fmt: skip


def _reads(inputs: tuple) -> tuple:
    # the weights' gradients read x; the input's reads the weights' packed copy, saved
    wants_w = any(t.requires_grad for t in inputs[1:])
    return (wants_w,) + (False,) * (len(inputs) - 1)


def _packed(ts):
    """One tensor of the q, k and v rows: the packed one itself, or the three joined."""
    return ts[0] if len(ts) == 1 else ts[0].cat(list(ts[1:]), 0)


def _project(x, wb: tuple, parts: int, heads: int):
    """The packed weights [3 H D, E] and q, k, v [B, H, T, D] as views of x's one
    projection [B T, 3 H D] (fresh, so contiguous). ``wb``: the node's weights (``parts``
    of them: 3, or 1 packed), then its biases, if any, alike."""
    B, T, E = x.shape
    W = _packed(wb[:parts])
    bias = _packed(wb[parts:]) if len(wb) > parts else None
    flat = x.reshape(-1, E)
    if fuses_dense(flat, W, bias):  # the bias added in the matmul's store
        y = flat.prim("dense_act", W, bias, act="none", split_backward=True)
        y = y.reshape(y.shape[1:])
    else:
        y = flat @ W.mT
        y = y if bias is None else y + bias
    n = W.shape[0] // 3
    D = n // heads
    strides = (T * 3 * n, D, 3 * n, 1)
    qkv = [unrecorded_view(y, (B, heads, T, D), strides, y.offset + i * n) for i in range(3)]
    return W, qkv


def _weight_grads(node, G, W):
    """The input's and the q, k, v weights' and biases' gradients (or the packed ones')
    from the packed projection's gradient G [B T, 3 H D]."""
    needs, parts = node.needs, node.attrs["parts"]
    x = node.inputs[0]
    split = (lambda g: (g,)) if parts == 1 else _thirds
    gx = (G @ W).reshape(x.shape) if needs[0] else None
    gW = G.mT @ x.detach().reshape(-1, x.shape[-1]) if any(needs[1 : 1 + parts]) else None
    gb = G.sum(0) if any(needs[1 + parts :]) else None
    return (gx, *split(gW), *(split(gb) if len(needs) > 1 + parts else ()))


def _forward_fused(x, *wb, heads, scale, causal, parts):
    W, (q, k, v) = _project(x, wb, parts, heads)
    B, H, T, D = q.shape
    Y = q.prim("flash_attention", k, v, causal=causal, scale=scale)  # [B, H, T, D + 1]
    out = unrecorded_view(Y, (B, T, H, D), (Y.strides[0], Y.strides[2], Y.strides[1], 1), 0)
    out = out.reshape(B, T, H * D)
    return out, {"W": W, "q": q, "k": k, "v": v, "Y": Y}


def _vjp_fused(node, g):
    s, a = node.saved, node.attrs
    q, k, v, Y, W = s["q"], s["k"], s["v"], s["Y"], s["W"]
    B, H, T, D = q.shape
    gm = g.reshape(B, T, H, D).permute(0, 2, 1, 3)
    gy = gm.prim("pad", lo=(0, 0, 0, 0), hi=(0, 0, 0, 1), interior=(0, 0, 0, 0), value=0.0)
    flat = q.prim("flash_attention_backward", k, v, Y, gy, causal=a["causal"], scale=a["scale"])
    n = H * D
    # flat is [3, B, H, T, D]: read as [B, T, 3, H, D], the packed projection's layout
    parts = unrecorded_view(flat, (B, T, 3, H, D), (H * T * D, D, B * n * T, T * D, 1), 0)
    return _weight_grads(node, parts.reshape(B * T, 3 * n), W)


def _forward(x, *wb, heads, scale, keep, guard, parts):
    W, (q, k, v) = _project(x, wb, parts, heads)
    B, H, T, D = q.shape
    scores = (q @ k.mT) * scale
    if keep is not None:
        scores = scores.where(keep, MASKED)
    w = softmax(scores, -1)
    out = (w @ v).permute(0, 2, 1, 3).reshape(B, T, H * D)
    return out, {"W": W, "q": q, "k": k, "v": v, "w": w}


def _vjp(node, g):
    s, a = node.saved, node.attrs
    q, k, v, w, W = s["q"], s["k"], s["v"], s["w"], s["W"]
    B, H, T, D = q.shape
    gm = g.reshape(B, T, H, D).permute(0, 2, 1, 3)  # [B, H, T, D]
    gw = gm @ v.mT
    gv = w.mT @ gm
    gs = w * (gw - (gw * w).sum(-1, keepdim=True))  # the softmax's backward
    if a["guard"]:  # a row whose every key is masked has uniform weights, no gradient
        gs = gs.where(a["keep"], 0.0)
    gs = gs * a["scale"]
    gq, gk = gs @ k, gs.mT @ q
    # the three heads' gradients side by side as the packed projection's [B T, 3 H D]
    parts = [_as_part(t) for t in (gq, gk, gv)]
    return _weight_grads(node, parts[0].cat(parts[1:], 2).reshape(B * T, 3 * H * D), W)


def _as_part(t):
    """[B, H, T, D] as the [B, T, 1, H, D] view the packed gradient concatenates."""
    B, H, T, D = t.shape
    sB, sH, sT, sD = t.strides
    return unrecorded_view(t, (B, T, 1, H, D), (sB, sT, H * sH, sH, sD), t.offset)


def _thirds(g):
    """The q, k and v rows of a packed (contiguous) gradient, as views."""
    if g is None:
        return (None,) * 3
    n = g.shape[0] // 3
    rest = g.shape[1:]
    step = n * (rest[0] if rest else 1)
    strides = g.strides
    return tuple(unrecorded_view(g, (n, *rest), strides, g.offset + i * step) for i in range(3))
