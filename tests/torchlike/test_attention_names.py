"""torch's attention layers by name: MultiheadAttention, the encoder and decoder layers
and nn.Transformer list the parameters and modules torch lists, in torch's order and
shapes, answer torch's attributes, cross state dicts both ways, and compute what the
catalog blocks they are drawn from compute."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tlutil import close

import scellis as sc
from scellis.base.rng import Generator
from scellis.catalog import blocks as B

pytestmark = pytest.mark.torch

BUILDS = {
    "mha": lambda nn: nn.MultiheadAttention(8, 2, batch_first=True),
    "mha_no_bias": lambda nn: nn.MultiheadAttention(8, 2, bias=False),
    "mha_kv_dims": lambda nn: nn.MultiheadAttention(8, 2, kdim=5, vdim=3, add_bias_kv=True),
    "encoder_layer": lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
    "pre_norm_layer": lambda nn: nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, bias=False),
    "encoder": lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2, enable_nested_tensor=False
    ),
    "decoder_layer": lambda nn: nn.TransformerDecoderLayer(8, 2, 16),
    "transformer": lambda nn: nn.Transformer(8, 2, 1, 1, 16),
}


def _names(m):
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()]


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's nested-tensor notes
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_parameters_modules_and_state_keys_are_torchs(name):
    theirs, ours = BUILDS[name](torch.nn), BUILDS[name](sc.nn)
    assert _names(ours) == _names(theirs)
    assert [tuple(p.shape) for p in ours.parameters()] == [
        tuple(p.shape) for p in theirs.parameters()
    ]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_torch_attributes_of_the_layers():
    mha = sc.nn.MultiheadAttention(8, 2, kdim=5, vdim=3)
    assert mha.in_proj_weight is None and tuple(mha.k_proj_weight.shape) == (8, 5)
    assert (mha.embed_dim, mha.num_heads, mha.head_dim, mha.kdim, mha.vdim) == (8, 2, 4, 5, 3)
    assert mha._qkv_same_embed_dim is False and mha.bias_k is None
    layer = sc.nn.TransformerEncoderLayer(8, 2, 16)
    assert isinstance(layer.self_attn, sc.nn.MultiheadAttention)
    assert isinstance(layer.linear1, sc.nn.Linear) and isinstance(layer.norm2, sc.nn.LayerNorm)
    assert tuple(layer.self_attn.in_proj_weight.shape) == (24, 8)
    assert isinstance(layer.self_attn.out_proj, sc.nn.Linear)
    assert tuple(layer.linear2.weight.shape) == (8, 16) and layer.dropout1.p == 0.1
    assert layer.get_parameter("self_attn.out_proj.bias") is layer.self_attn.out_proj.bias


def _inputs(seed, *shape):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(a, requires_grad=True), sc.tensor(a, requires_grad=True)


@pytest.mark.parametrize("norm_first", [False, True])
def test_state_dicts_cross_both_ways_and_gradients_match_by_name(norm_first):
    torch.manual_seed(4)
    kw = dict(dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=norm_first)
    theirs, ours = (
        torch.nn.TransformerEncoderLayer(8, 2, **kw),
        sc.nn.TransformerEncoderLayer(8, 2, **kw),
    )
    with torch.no_grad():  # non-zero biases, so a misplaced one shows
        for p in theirs.parameters():
            p.add_(torch.randn(p.shape) * 0.1)
    ours.load_state_dict(theirs.state_dict())
    tx, sx = _inputs(1, 2, 5, 8)
    ty, sy = theirs(tx), ours(sx)
    close(sy, ty, atol=1e-5)
    R = np.random.default_rng(2).standard_normal((2, 5, 8)).astype(np.float32)
    (ty * torch.tensor(R)).sum().backward()
    (sy * sc.tensor(R)).sum().backward()
    close(sx.grad, tx.grad, atol=1e-4)
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        close(mine[name].grad, p.grad, atol=1e-4)
    back = torch.nn.TransformerEncoderLayer(8, 2, **kw)
    back.load_state_dict({k: torch.tensor(v.tolist()) for k, v in ours.state_dict().items()})
    close(sy, back(tx), atol=1e-5)


def test_the_multihead_attention_draws_as_the_catalog_block():
    ours = sc.nn.MultiheadAttention(8, 2, generator=Generator(5, "draws"))
    block = B.MultiHeadAttention(B.AttentionConfig(8, 2), gen=Generator(5, "draws"))
    packed = [block.q.weight, block.k.weight, block.v.weight]
    close(ours.in_proj_weight, torch.tensor(np.concatenate([p.tolist() for p in packed])))
    close(ours.out_proj.weight, torch.tensor(block.o.weight.tolist()))


def _catalog_twin(layer, norm_first):
    """A catalog transformer block with ``layer``'s weights under its own names."""
    cfg = B.TransformerBlockConfig(8, 2, 16, "encoder", 0.25, "gelu", norm_first=norm_first)
    blk = B.TransformerBlock(cfg, gen=Generator(9, "twin"))
    w = layer.self_attn.in_proj_weight.tolist()
    b = layer.self_attn.in_proj_bias.tolist()
    state = {f"attn.{n}.weight": w[8 * i : 8 * i + 8] for i, n in enumerate("qkv")}
    state.update({f"attn.{n}.bias": b[8 * i : 8 * i + 8] for i, n in enumerate("qkv")})
    ours = {"attn.o": "self_attn.out_proj", "mlp.fc1": "linear1", "mlp.fc2": "linear2",
            "ln1": "norm1", "ln2": "norm2"}  # fmt: skip
    for mine, theirs in ours.items():
        for kind in ("weight", "bias"):
            state[f"{mine}.{kind}"] = getattr(layer.get_submodule(theirs), kind).tolist()
    blk.load_state_dict({k: sc.tensor(v) for k, v in state.items()})
    return blk


@pytest.mark.parametrize("norm_first", [False, True])
def test_the_encoder_layer_trains_as_the_catalog_block_with_dropout(norm_first):
    layer = sc.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, activation="gelu",
                                          batch_first=True, norm_first=norm_first)  # fmt: skip
    blk = _catalog_twin(layer, norm_first)
    x = np.random.default_rng(3).standard_normal((2, 6, 8)).astype(np.float32)
    outs = []
    for m in (layer, blk):
        sc.manual_seed(11)  # the same dropout masks on both
        xs = sc.tensor(x, requires_grad=True)
        y = m(xs)
        y.square().sum().backward()
        outs.append((np.asarray(y.tolist()), np.asarray(xs.grad.tolist())))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    g = np.concatenate([np.asarray(blk.attn.get_submodule(n).weight.grad.tolist()) for n in "qkv"])
    np.testing.assert_array_equal(np.asarray(layer.self_attn.in_proj_weight.grad.tolist()), g)


def test_hooks_on_the_inner_layers_see_every_call():
    layer = sc.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    seen = []
    for name in ("self_attn", "self_attn.out_proj", "linear1", "norm2"):
        hook = lambda m, args, out, name=name: seen.append(name)  # noqa: E731
        layer.get_submodule(name).register_forward_hook(hook)
    layer(sc.randn(2, 3, 8))
    assert sorted(seen) == ["linear1", "norm2", "self_attn", "self_attn.out_proj"]
