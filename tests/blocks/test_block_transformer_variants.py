"""The transformer variants imported models need: grouped-query attention, scaled RoPE,
RMS-norm + gated-MLP (Llama) blocks, post-norm (BERT) blocks, token types.

Each is checked against a plain torch formula on the reference device; the Hugging
Face import tests check them again against ``transformers`` end to end.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from blockutil import arr, gen, rng_for

import scellis as sc
from scellis.catalog import blocks as B

E, H = 8, 4


def _x(name, shape=(2, 5, E)):
    return rng_for(name).standard_normal(shape).astype(np.float32)


def _t(m, name):
    return torch.tensor(arr(getattr_path(m, name)))


def getattr_path(m, path):
    for p in path.split("."):
        m = getattr(m, p)
    return m


def _rope(x, base, scaling):
    T, D = x.shape[-2], x.shape[-1]
    inv = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.float64) / D)) / scaling
    a = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    a = torch.cat([a, a], -1)
    rot = torch.cat([-x[..., D // 2 :], x[..., : D // 2]], -1)
    return (x * a.cos() + rot * a.sin()).float()


def _torch_attention(m, x, kv, causal, base=10000.0, scaling=1.0, rotary=False):
    B_, T, _ = x.shape
    D = E // H

    def proj(n):
        w, b = _t(m, f"{n}.weight"), getattr(m, n).bias
        y = x @ w.T + (torch.tensor(arr(b)) if b is not None else 0)
        return y.reshape(B_, T, -1, D).transpose(1, 2)

    q, k, v = proj("q"), proj("k"), proj("v")
    if rotary:
        q, k = _rope(q, base, scaling), _rope(k, base, scaling)
    k, v = k.repeat_interleave(H // kv, 1), v.repeat_interleave(H // kv, 1)
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B_, T, E)
    return y @ _t(m, "o.weight").T + (torch.tensor(arr(m.o.bias)) if m.o.bias is not None else 0)


def test_grouped_query_attention_with_scaled_rope_matches_torch():
    cfg = B.AttentionConfig(E, H, bias=False, causal=True, rotary=True, rotary_base=500.0,
                            num_kv_heads=2, rotary_scaling=2.0, qkv_bias=True)  # fmt: skip
    m = B.MultiHeadAttention(cfg, gen=gen(3))
    assert tuple(m.k.weight.shape) == (E // H * 2, E) and m.k.bias is not None
    assert m.o.bias is None
    x = _x("gqa")
    ours = arr(m(sc.tensor(x)))
    want = _torch_attention(m, torch.tensor(x), 2, True, 500.0, 2.0, rotary=True)
    np.testing.assert_allclose(ours, want.numpy(), rtol=1e-5, atol=1e-5)


def test_llama_block_rms_norm_and_gated_mlp_match_torch():
    cfg = B.TransformerBlockConfig(E, H, d_ff=12, kind="decoder", activation="silu", eps=1e-6,
                                   bias=False, norm="rms", mlp="gated", num_kv_heads=1,
                                   rotary=True)  # fmt: skip
    m = B.TransformerBlock(cfg, gen=gen(4))
    x = torch.tensor(_x("llama"))

    def rms(v, w):
        return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6) * torch.tensor(arr(w))

    h = x + _torch_attention(m.attn, rms(x, m.ln1.weight), 1, True, rotary=True)
    g = rms(h, m.ln2.weight)
    mlp = m.mlp
    hid = torch.nn.functional.silu(g @ _t(mlp, "gate.weight").T) * (g @ _t(mlp, "up.weight").T)
    want = h + hid @ _t(mlp, "down.weight").T
    np.testing.assert_allclose(arr(m(sc.tensor(x.numpy()))), want.numpy(), rtol=1e-5, atol=1e-5)


def test_post_norm_block_matches_torch_norm_first_false():
    cfg = B.TransformerBlockConfig(E, H, d_ff=12, norm_first=False, eps=1e-12)
    m = B.TransformerBlock(cfg, gen=gen(5))
    t = torch.nn.TransformerEncoderLayer(E, H, 12, dropout=0.0, activation="gelu",
                                         layer_norm_eps=1e-12, batch_first=True,
                                         norm_first=False)  # fmt: skip
    sd = {"self_attn.in_proj_weight": torch.cat([_t(m, f"attn.{n}.weight") for n in "qkv"]),
          "self_attn.in_proj_bias": torch.cat([_t(m, f"attn.{n}.bias") for n in "qkv"]),
          "self_attn.out_proj.weight": _t(m, "attn.o.weight"),
          "self_attn.out_proj.bias": _t(m, "attn.o.bias"),
          "linear1.weight": _t(m, "mlp.fc1.weight"), "linear1.bias": _t(m, "mlp.fc1.bias"),
          "linear2.weight": _t(m, "mlp.fc2.weight"), "linear2.bias": _t(m, "mlp.fc2.bias"),
          "norm1.weight": _t(m, "ln1.weight"), "norm1.bias": _t(m, "ln1.bias"),
          "norm2.weight": _t(m, "ln2.weight"), "norm2.bias": _t(m, "ln2.bias")}  # fmt: skip
    t.load_state_dict(sd)
    x = _x("post")
    with torch.no_grad():
        want = t.eval()(torch.tensor(x)).numpy()
    np.testing.assert_allclose(arr(m(sc.tensor(x))), want, rtol=1e-5, atol=1e-5)


def test_token_types_add_their_rows():
    m = B.TokenType(B.TokenTypeConfig(E, 3), gen=gen(6))
    x = _x("types")
    w = arr(m.weight)
    np.testing.assert_allclose(arr(m(sc.tensor(x))), x + w[0], rtol=1e-6)
    types = np.array([[0, 1, 2, 1, 0], [2, 2, 0, 0, 1]])
    got = arr(m(sc.tensor(x), sc.tensor(types.tolist(), dtype="i32")))
    np.testing.assert_allclose(got, x + w[types], rtol=1e-6)
