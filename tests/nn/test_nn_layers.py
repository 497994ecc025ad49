"""scellis.nn layers against torch.nn: torch's weights loaded by torch's key names,
forward outputs and gradients compared on random inputs (reference device, f32)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nnutil import arr, compare, pair, rng_for, th

import scellis as sc
from scellis import nn


def normal(name, *shape):
    return rng_for(name).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    compare(nn.Linear(5, 3, bias=bias), torch.nn.Linear(5, 3, bias=bias),
            [normal("lin", 4, 2, 5)], f"linear{bias}")  # fmt: skip


def test_embedding_with_padding_row():
    ids = rng_for("emb").integers(0, 7, (3, 4))
    ours, theirs = nn.Embedding(7, 5, padding_idx=2), torch.nn.Embedding(7, 5, padding_idx=2)
    compare(ours, theirs, [ids], "embedding")


def test_layer_norm():
    compare(nn.LayerNorm(6, eps=1e-4), torch.nn.LayerNorm(6, eps=1e-4),
            [normal("ln", 3, 6)], "layer_norm")  # fmt: skip


def test_activations_in_a_sequential():
    def build(lib, **kw):
        return lib.Sequential(
            lib.Linear(4, 8), lib.ReLU(), lib.Linear(8, 8), lib.GELU(), lib.Linear(8, 8),
            lib.Tanh(), lib.Linear(8, 6), lib.Sigmoid(), lib.Dropout(0.0), lib.Linear(6, 2),
        )  # fmt: skip

    compare(build(nn), build(torch.nn), [normal("seq", 5, 4)], "sequential")


@pytest.mark.parametrize("batch_first", [True, False])
def test_lstm_two_layers_with_initial_state(batch_first):
    B, T, F, H, L = 3, 5, 2, 4, 2
    x = normal("lstm:x", B, T, F) if batch_first else normal("lstm:x", T, B, F)
    h0, c0 = normal("lstm:h", L, B, H), normal("lstm:c", L, B, H)
    ours = nn.LSTM(F, H, num_layers=L, batch_first=batch_first)
    theirs = torch.nn.LSTM(F, H, num_layers=L, batch_first=batch_first)
    call = lambda m, x, h, c: m(x, (h, c))  # noqa: E731
    compare(ours, theirs, [x, h0, c0], f"lstm{batch_first}", call=call)
    out, (h, c) = ours(sc.tensor(x), (sc.tensor(h0), sc.tensor(c0)))
    with torch.no_grad():
        tout, (th_, tc) = theirs(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    torch.testing.assert_close(th(h), th_)
    torch.testing.assert_close(th(c), tc)


def test_gru_unbatched_and_batched():
    ours, theirs = nn.GRU(3, 4, num_layers=2), torch.nn.GRU(3, 4, num_layers=2)
    compare(ours, theirs, [normal("gru", 6, 2, 3)], "gru")
    out, h = ours(sc.tensor(normal("gru1", 6, 3)))
    tout, th_ = theirs(torch.tensor(normal("gru1", 6, 3)))
    assert out.shape == (6, 4) and h.shape == (2, 4)
    torch.testing.assert_close(th(out), tout.detach())
    torch.testing.assert_close(th(h), th_.detach())


def test_multihead_attention_with_padding_mask():
    E, H = 8, 2
    x = normal("mha:x", 3, 5, E)
    pad = np.zeros((3, 5), dtype=bool)
    pad[1, 3:] = True
    ours = nn.MultiheadAttention(E, H, batch_first=True)
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=True)
    xs, xt = pair(x)
    ps, pt = pair(pad)
    ours.load_state_dict(theirs.state_dict())
    y, w = ours(xs, xs, xs, key_padding_mask=ps, need_weights=False)  # the block
    ty, _ = theirs(xt, xt, xt, key_padding_mask=pt)
    assert w is None
    torch.testing.assert_close(th(y), ty.detach())
    R = normal("mha:R", 3, 5, E)
    y.backward(sc.tensor(R))
    ty.backward(torch.tensor(R))
    torch.testing.assert_close(th(xs.grad), xt.grad)
    for (name, p), (tname, tp) in zip(ours.named_parameters(), theirs.named_parameters(),
                                      strict=True):  # fmt: skip
        assert name == tname
        torch.testing.assert_close(th(p.grad), tp.grad)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer(norm_first):
    kw = dict(dim_feedforward=16, dropout=0.0, batch_first=False, norm_first=norm_first)
    ours = nn.TransformerEncoderLayer(8, 2, **kw)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, **kw)
    compare(ours, theirs, [normal("tel", 5, 2, 8)], f"tel{norm_first}")


def test_unsupported_options_say_so():
    with pytest.raises(sc.ScellisError, match="not supported yet"):
        nn.Conv1d(2, 3, 3, padding_mode="mirror")
    with pytest.raises(sc.ScellisError, match="attn_mask of shape"):
        m = nn.MultiheadAttention(4, 2)
        x = sc.tensor(normal("u", 3, 1, 4))
        m(x, x, x, attn_mask=x)


def test_loss_modules_and_functional_match_torch():
    logits, tlogits = pair(normal("ce", 4, 5, 3))  # [N, C, d1] as torch lays it out
    target = rng_for("ce:t").integers(0, 5, (4, 3))
    ti, tt = pair(target)
    ours = nn.CrossEntropyLoss(label_smoothing=0.1)(logits, ti)
    theirs = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(tlogits, tt)
    torch.testing.assert_close(th(ours), theirs.detach())
    a, b = normal("mse:a", 6), normal("mse:b", 6)
    got = nn.functional.mse_loss(sc.tensor(a), sc.tensor(b)).item()
    assert got == pytest.approx(
        torch.nn.functional.mse_loss(torch.tensor(a), torch.tensor(b)).item(), rel=1e-6
    )
    x = normal("sm", 3, 4)
    torch.testing.assert_close(
        th(nn.functional.softmax(sc.tensor(x), dim=0)), torch.softmax(torch.tensor(x), dim=0)
    )
    torch.testing.assert_close(
        th(nn.functional.gelu(sc.tensor(x))), torch.nn.functional.gelu(torch.tensor(x))
    )
    torch.testing.assert_close(th(nn.functional.relu(sc.tensor(x))), torch.relu(torch.tensor(x)))
    assert arr(nn.functional.relu(sc.tensor(x))).min() >= 0


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's note on its nested-tensor path
def test_transformer_encoder_stack_with_final_norm():
    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0)
        return lib.nn.TransformerEncoder(layer, num_layers=2, norm=lib.nn.LayerNorm(8))

    torch.manual_seed(1)
    theirs = build(torch)
    ours = build(sc)
    assert list(ours.state_dict()) == list(theirs.state_dict())  # torch's names, packed
    ours.load_state_dict(theirs.state_dict())
    x = normal("enc", 4, 3, 8)
    y = ours(sc.tensor(x))
    with torch.no_grad():
        ty = theirs(torch.tensor(x))
    torch.testing.assert_close(th(y), ty)


@pytest.mark.parametrize("batch_first", [True, False])
def test_bidirectional_lstm_with_torch_names_and_state(batch_first):
    B, T, F, H, L = 2, 5, 3, 4, 2
    x = normal("bilstm:x", B, T, F) if batch_first else normal("bilstm:x", T, B, F)
    h0, c0 = normal("bilstm:h", 2 * L, B, H), normal("bilstm:c", 2 * L, B, H)
    ours = nn.LSTM(F, H, num_layers=L, batch_first=batch_first, bidirectional=True)
    theirs = torch.nn.LSTM(F, H, num_layers=L, batch_first=batch_first, bidirectional=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "weight_ih_l1_reverse" in ours.state_dict()
    call = lambda m, x, h, c: m(x, (h, c))  # noqa: E731
    compare(ours, theirs, [x, h0, c0], f"bilstm{batch_first}", call=call)
    out, (h, c) = ours(sc.tensor(x), (sc.tensor(h0), sc.tensor(c0)))
    with torch.no_grad():
        tout, (th_, tc) = theirs(torch.tensor(x), (torch.tensor(h0), torch.tensor(c0)))
    assert out.shape == tout.shape and h.shape == (2 * L, B, H)
    torch.testing.assert_close(th(h), th_)
    torch.testing.assert_close(th(c), tc)


def test_bidirectional_gru_final_state():
    ours = nn.GRU(3, 4, num_layers=2, bidirectional=True)
    theirs = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True)
    call = lambda m, x: m(x)[1]  # noqa: E731
    compare(ours, theirs, [normal("bigru", 6, 2, 3)], "bigru", call=call)


@pytest.mark.parametrize(
    "args",
    [
        dict(in_channels=3, out_channels=4, kernel_size=3),
        dict(in_channels=4, out_channels=6, kernel_size=(3,), stride=2, padding=1, groups=2),
        dict(in_channels=2, out_channels=3, kernel_size=3, padding="same", dilation=2),
        dict(in_channels=2, out_channels=2, kernel_size=2, bias=False, padding="valid"),
    ],
)
def test_conv1d_takes_torch_layout_and_state(args):
    ours, theirs = nn.Conv1d(**args), torch.nn.Conv1d(**args)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    name = "conv" + "".join(map(str, args.values()))
    compare(ours, theirs, [normal(name, 2, args["in_channels"], 9)], name)
    y = ours(sc.tensor(normal(name + "u", args["in_channels"], 9)))  # unbatched [C, T]
    with torch.no_grad():
        ty = theirs(torch.tensor(normal(name + "u", args["in_channels"], 9)))
    torch.testing.assert_close(th(y), ty)


def test_causal_conv1d_is_torch_conv_on_left_padded_input():
    ours = nn.Conv1d(2, 3, 3, dilation=2, padding="causal")
    theirs = torch.nn.Conv1d(2, 3, 3, dilation=2)
    call_t = lambda m, x: m(torch.nn.functional.pad(x, (4, 0)))  # noqa: E731
    ours.load_state_dict(theirs.state_dict())
    x = normal("causal", 2, 2, 7)
    torch.testing.assert_close(th(ours(sc.tensor(x))), call_t(theirs, torch.tensor(x)).detach())


@pytest.mark.parametrize("k,s,p", [(2, None, 0), (3, 2, 1)])
def test_pooling_layers(k, s, p):
    x = normal(f"pool{k}{s}{p}", 2, 3, 10)
    compare(nn.MaxPool1d(k, s, p), torch.nn.MaxPool1d(k, s, p), [x], f"max{k}{s}{p}")
    compare(nn.AvgPool1d(k, s, p), torch.nn.AvgPool1d(k, s, p), [x], f"avg{k}{s}{p}")


def test_adaptive_pooling_to_one_step():
    x = normal("adaptive", 2, 3, 7)
    compare(nn.AdaptiveAvgPool1d(1), torch.nn.AdaptiveAvgPool1d(1), [x], "adaptive_avg")
    compare(nn.AdaptiveMaxPool1d((1,)), torch.nn.AdaptiveMaxPool1d(1), [x], "adaptive_max")
    y = nn.AdaptiveMaxPool1d(1)(sc.tensor(x[0]))
    torch.testing.assert_close(th(y), torch.nn.AdaptiveMaxPool1d(1)(torch.tensor(x[0])))


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6)])
def test_batch_norm1d_train_eval_and_state(shape):
    ours, theirs = nn.BatchNorm1d(3, momentum=0.2), torch.nn.BatchNorm1d(3, momentum=0.2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for i in range(2):
        compare(ours, theirs, [normal(f"bn{shape}{i}", *shape) * 3 + 1], f"bn{shape}{i}")
    for k in ("running_mean", "running_var"):
        torch.testing.assert_close(th(ours.state_dict()[k]), theirs.state_dict()[k])
    assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 2
    ours.eval(), theirs.eval()
    compare(ours, theirs, [normal(f"bn{shape}e", *shape)], f"bn{shape}e")
    fresh = nn.BatchNorm1d(3, momentum=0.2)
    fresh.load_state_dict(ours.state_dict())
    assert arr(fresh.running_var).tolist() == arr(ours.running_var).tolist()
