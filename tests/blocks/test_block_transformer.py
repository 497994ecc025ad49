"""Pre-norm transformer blocks and stacks against torch.nn.TransformerEncoderLayer/Encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from blockutil import arr, compare, gen, rng_for

import scellis as sc
from scellis.catalog import blocks as B

E, H, FF = 8, 2, 12


def _attn_map(prefix: str, tprefix: str) -> dict:
    m = {}
    for i, n in enumerate("qkv"):
        rows = slice(i * E, (i + 1) * E)
        m[f"{prefix}.{n}.weight"] = (f"{tprefix}.in_proj_weight", rows)
        m[f"{prefix}.{n}.bias"] = (f"{tprefix}.in_proj_bias", rows)
    m[f"{prefix}.o.weight"] = (f"{tprefix}.out_proj.weight", None)
    m[f"{prefix}.o.bias"] = (f"{tprefix}.out_proj.bias", None)
    return m


def _block_map(ours: str = "", theirs: str = "") -> dict:
    m = _attn_map(ours + "attn", theirs + "self_attn")
    for a, b in (
        ("ln1", "norm1"),
        ("ln2", "norm2"),
        ("mlp.fc1", "linear1"),
        ("mlp.fc2", "linear2"),
    ):
        for w in ("weight", "bias"):
            m[f"{ours}{a}.{w}"] = (f"{theirs}{b}.{w}", None)
    return m


def _torch_layer():
    return torch.nn.TransformerEncoderLayer(
        E, H, FF, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    )


def _perturb_norms(m, rng):
    for name, p in list(m.named_parameters()):
        if ".ln" in "." + name or name.startswith("ln"):
            noise = rng.standard_normal(p.shape).astype(np.float32) * 0.3
            m.set_parameter(name, sc.tensor(arr(p) + noise, dtype="f32"))


BLOCK_NAMES = (
    ["ln1.weight", "ln1.bias"]
    + [f"attn.{p}.{w}" for p in "qkvo" for w in ("weight", "bias")]
    + ["ln2.weight", "ln2.bias", "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"]
)


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_block_matches_torch_encoder_layer(kind):
    rng = rng_for("tblock_" + kind)
    m = B.TransformerBlock(B.TransformerBlockConfig(E, H, FF, kind=kind), gen=gen())
    assert [n for n, _ in m.named_parameters()] == BLOCK_NAMES
    _perturb_norms(m, rng)
    T = 5
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T) if kind == "decoder" else None
    compare(
        m,
        _torch_layer(),
        [rng.standard_normal((2, T, E))],
        f_torch=lambda t, x: t(x, src_mask=causal, is_causal=causal is not None),
        mapping=_block_map(),
        name="tblock_" + kind,
    )


def test_encoder_block_with_padding_mask():
    rng = rng_for("tblock_pad")
    m = B.TransformerBlock(B.TransformerBlockConfig(E, H, FF), gen=gen())
    keep = np.ones((2, 5), bool)
    keep[1, 3:] = False
    compare(
        m,
        _torch_layer(),
        [rng.standard_normal((2, 5, E)), keep],
        f_ours=lambda m, x, k: m(x, k),
        f_torch=lambda t, x, k: t(x, src_key_padding_mask=~k),
        mapping=_block_map(),
        name="tblock_pad",
    )


def test_decoder_stack_names_and_match():
    rng = rng_for("tstack")
    m = B.Transformer(B.TransformerConfig(E, H, 2, d_ff=FF, kind="decoder"), gen=gen())
    names = [n for n, _ in m.named_parameters()]
    assert names == (
        [f"blocks.0.{n}" for n in BLOCK_NAMES]
        + [f"blocks.1.{n}" for n in BLOCK_NAMES]
        + ["ln_f.weight", "ln_f.bias"]
    )
    assert "blocks.0.attn.q.weight" in m.state_dict()
    _perturb_norms(m, rng)
    t = torch.nn.TransformerEncoder(
        _torch_layer(), 2, norm=torch.nn.LayerNorm(E), enable_nested_tensor=False
    )
    mapping = {**_block_map("blocks.0.", "layers.0."), **_block_map("blocks.1.", "layers.1.")}
    mapping.update({"ln_f.weight": ("norm.weight", None), "ln_f.bias": ("norm.bias", None)})
    T = 4
    causal = torch.nn.Transformer.generate_square_subsequent_mask(T)
    compare(
        m,
        t,
        [rng.standard_normal((2, T, E))],
        f_torch=lambda t, x: t(x, mask=causal, is_causal=True),
        mapping=mapping,
        name="tstack",
    )


def test_d_ff_defaults_to_four_times_d_model_and_rotary_is_passed_on():
    m = B.TransformerBlock(B.TransformerBlockConfig(E, H, rotary=True), gen=gen())
    assert m.mlp.fc1.weight.shape == (4 * E, E)
    assert m.attn.config.rotary and not m.attn.config.causal
    assert B.TransformerBlock(B.TransformerBlockConfig(E, H, kind="decoder")).attn.config.causal


def test_dropout_only_in_training():
    rng = rng_for("tblock_dropout")
    x = sc.tensor(rng.standard_normal((2, 4, E)).astype(np.float32))
    m = B.TransformerBlock(B.TransformerBlockConfig(E, H, dropout=0.3), gen=gen())
    plain = B.TransformerBlock(B.TransformerBlockConfig(E, H), gen=gen())
    np.testing.assert_allclose(arr(m.eval()(x)), arr(plain(x)), rtol=0, atol=0)
    assert not np.allclose(arr(m.train()(x)), arr(plain(x)))
