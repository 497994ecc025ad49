"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch's: the same
state dict keys, torch's weights loaded, outputs and gradients compared with masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nnutil import compare, pair, rng_for

import scellis as sc
from scellis import nn
from scellis.base.errors import ScellisError


def normal(name, *shape):
    return rng_for(name).standard_normal(shape).astype(np.float32)


KW = dict(d_model=8, nhead=2, dim_feedforward=12, dropout=0.0)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_with_causal_and_padding_masks(norm_first, batch_first):
    kw = dict(KW, norm_first=norm_first, batch_first=batch_first, activation="gelu")
    ours, theirs = nn.TransformerDecoderLayer(**kw), torch.nn.TransformerDecoderLayer(**kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    B, T, S = 2, 4, 5
    tgt = normal("dec:t", B, T, 8) if batch_first else normal("dec:t", T, B, 8)
    mem = normal("dec:m", B, S, 8) if batch_first else normal("dec:m", S, B, 8)
    pad = np.zeros((B, S), bool)
    pad[1, 3:] = True
    ours_mask = nn.Transformer.generate_square_subsequent_mask(T)
    theirs_mask = torch.nn.Transformer.generate_square_subsequent_mask(T)
    pad_s, pad_t = pair(pad)

    def call(m, a, b):
        if m is ours:
            return m(a, b, tgt_mask=ours_mask, memory_key_padding_mask=pad_s)
        return m(a, b, tgt_mask=theirs_mask, memory_key_padding_mask=pad_t)

    compare(ours, theirs, [tgt, mem], "dec", call=call)


def test_transformer_encoder_decoder_matches_torch():
    kw = dict(KW, num_encoder_layers=2, num_decoder_layers=2, batch_first=True)
    ours, theirs = nn.Transformer(**kw), torch.nn.Transformer(**kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for p in ours.parameters():  # torch's xavier init: every matrix within its bound
        if p.ndim > 1:
            bound = np.sqrt(6.0 / (p.shape[0] + p.shape[1]))
            assert np.abs(np.asarray(p.tolist())).max() <= bound + 1e-6
    mask_s = nn.Transformer.generate_square_subsequent_mask(3)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(3)
    call = lambda m, a, b: m(a, b, tgt_mask=mask_s if m is ours else mask_t)  # noqa: E731
    compare(ours, theirs, [normal("tr:s", 2, 5, 8), normal("tr:t", 2, 3, 8)], "tr", call=call)


def test_decoder_stack_starts_from_copies_of_its_layer():
    layer = nn.TransformerDecoderLayer(**KW)
    stack = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8))
    a, b = stack.layers[0].state_dict(), stack.layers[1].state_dict()
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k].tolist()), np.asarray(b[k].tolist()))
    theirs = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(**KW), 2,
                                         norm=torch.nn.LayerNorm(8))  # fmt: skip
    assert list(stack.state_dict()) == list(theirs.state_dict())
    compare(stack, theirs, [normal("ds:t", 3, 2, 8), normal("ds:m", 4, 2, 8)], "ds")


def test_encoder_reads_an_unflagged_mask_and_takes_only_the_causal_one():
    kw = dict(KW, batch_first=True)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), 1)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**kw), 1,
                                         enable_nested_tensor=False)  # fmt: skip
    mask_s = nn.Transformer.generate_square_subsequent_mask(4)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4)
    call = lambda m, a: m(a, mask_s if m is ours else mask_t)  # noqa: E731
    compare(ours, theirs, [normal("enc:x", 2, 4, 8)], "enc", call=call)
    other = sc.tensor(normal("enc:m", 4, 4))
    with pytest.raises(ScellisError, match="causal"):
        ours(sc.tensor(normal("enc:x", 2, 4, 8)), other)


def test_next_of_parameters_gives_the_first_as_torch():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    params = m.parameters()
    assert next(params) is m[0].weight and next(params) is m[0].bias
    assert len(list(params)) == 4  # still a whole list to hand an optimizer
