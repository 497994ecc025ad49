"""Multi-head attention against torch.nn.MultiheadAttention; RoPE against a torch reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from blockutil import arr, check_uniform, compare, gen, rng_for

import scellis as sc
from scellis.catalog import blocks as B

E, H = 8, 2


def _mapping(e: int) -> dict:
    m = {f"{n}.weight": ("in_proj_weight", slice(i * e, (i + 1) * e)) for i, n in enumerate("qkv")}
    m.update(
        {f"{n}.bias": ("in_proj_bias", slice(i * e, (i + 1) * e)) for i, n in enumerate("qkv")}
    )
    m.update({"o.weight": ("out_proj.weight", None), "o.bias": ("out_proj.bias", None)})
    return m


def _mask(rng, b: int, s: int) -> np.ndarray:
    keep = np.ones((b, s), bool)
    for i in range(b):
        keep[i, s - 1 - i :] = False  # right padding of varying length; the first key kept
    keep[0, -1] = False
    return keep


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_self_attention_matches_torch(causal, padded):
    name = f"mha_{causal}_{padded}"
    rng = rng_for(name)
    m = B.MultiHeadAttention(B.AttentionConfig(E, H, causal=causal), gen=gen())
    assert [n for n, _ in m.named_parameters()] == [
        f"{p}.{w}" for p in "qkvo" for w in ("weight", "bias")
    ]
    t = torch.nn.MultiheadAttention(E, H, batch_first=True)
    T = 5
    x = rng.standard_normal((3, T, E))
    inputs = [x] + ([_mask(rng, 3, T)] if padded else [])
    tri = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None

    def theirs(t, x, keep=None):
        pad = None if keep is None else ~keep
        return t(x, x, x, key_padding_mask=pad, attn_mask=tri, need_weights=False)[0]

    compare(m, t, inputs, lambda m, x, keep=None: m(x, keep), theirs, _mapping(E), name)


def test_cross_attention_matches_torch():
    rng = rng_for("cross")
    m = B.MultiHeadAttention(B.AttentionConfig(E, 4), gen=gen())
    t = torch.nn.MultiheadAttention(E, 4, batch_first=True)
    x, kv = rng.standard_normal((2, 3, E)), rng.standard_normal((2, 6, E))
    compare(
        m,
        t,
        [x, kv],
        lambda m, x, kv: m(x, kv=kv),
        lambda t, x, kv: t(x, kv, kv, need_weights=False)[0],
        _mapping(E),
        "cross",
    )


def _rope_torch(x, base=10000.0):
    T, D = x.shape[-2:]
    inv = torch.tensor([base ** (-2.0 * i / D) for i in range(D // 2)], dtype=torch.float32)
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)
    rot = torch.cat([-x[..., D // 2 :], x[..., : D // 2]], -1)
    return x * ang.cos() + rot * ang.sin()


def _attention_torch(t, x, keep, causal, rope):
    b, n, e = x.shape
    heads = lambda y: y.reshape(b, n, H, e // H).transpose(1, 2)  # noqa: E731
    q, k, v = heads(t.q(x)), heads(t.k(x)), heads(t.v(x))
    if rope:
        q, k = _rope_torch(q), _rope_torch(k)
    s = q @ k.transpose(-1, -2) / math.sqrt(e // H)
    allow = torch.ones(n, n, dtype=torch.bool)
    if causal:
        allow = torch.tril(allow)
    allow = allow & keep[:, None, None, :]
    w = s.masked_fill(~allow, float("-inf")).softmax(-1)
    return t.o((w @ v).transpose(1, 2).reshape(b, n, e))


def _torch_qkvo(e: int) -> torch.nn.Module:
    t = torch.nn.Module()
    for n in "qkvo":
        setattr(t, n, torch.nn.Linear(e, e))
    return t


@pytest.mark.parametrize("causal", [False, True])
def test_rotary_attention_matches_a_torch_reference(causal):
    name = f"rope_{causal}"
    rng = rng_for(name)
    m = B.MultiHeadAttention(B.AttentionConfig(E, H, causal=causal, rotary=True), gen=gen())
    x, keep = rng.standard_normal((3, 6, E)), _mask(rng, 3, 6)
    compare(
        m,
        _torch_qkvo(E),
        [x, keep],
        lambda m, x, k: m(x, k),
        lambda t, x, k: _attention_torch(t, x, k, causal, True),
        name=name,
    )


def test_plain_reference_agrees_with_torch_mha():
    # the hand-written reference above is itself torch's MHA when RoPE is off
    rng = rng_for("ref_check")
    x, keep = rng.standard_normal((2, 5, E)).astype(np.float32), _mask(rng, 2, 5)
    t, tm = _torch_qkvo(E), torch.nn.MultiheadAttention(E, H, batch_first=True)
    with torch.no_grad():
        tm.in_proj_weight.copy_(torch.cat([t.q.weight, t.k.weight, t.v.weight]))
        tm.in_proj_bias.copy_(torch.cat([t.q.bias, t.k.bias, t.v.bias]))
        tm.out_proj.weight.copy_(t.o.weight)
        tm.out_proj.bias.copy_(t.o.bias)
        xt, kt = torch.from_numpy(x), torch.from_numpy(keep)
        torch.testing.assert_close(
            _attention_torch(t, xt, kt, True, False),
            tm(
                xt,
                xt,
                xt,
                key_padding_mask=~kt,
                need_weights=False,
                attn_mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), 1),
            )[0],
        )


def test_init_follows_torch_multihead_attention():
    e = 64
    m = B.MultiHeadAttention(B.AttentionConfig(e, 4), gen=gen(2))
    for n in "qkv":
        check_uniform(getattr(m, n).weight, math.sqrt(6 / (4 * e)))
        assert np.all(arr(getattr(m, n).bias) == 0)
    check_uniform(m.o.weight, 1 / math.sqrt(e))
    assert np.all(arr(m.o.bias) == 0)


def test_fully_masked_rows_stay_finite():
    rng = rng_for("all_masked")
    m = B.MultiHeadAttention(B.AttentionConfig(E, H), gen=gen())
    x = sc.tensor(rng.standard_normal((1, 3, E)).astype(np.float32))
    out = arr(m(x, sc.tensor(np.zeros((1, 3), bool))))
    assert np.isfinite(out).all()
