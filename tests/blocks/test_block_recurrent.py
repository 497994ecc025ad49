"""LSTM and GRU against torch.nn.LSTM / GRU (batch_first, stacked, bidirectional)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from blockutil import arr, check_uniform, compare, gen, rng_for

import scellis as sc
from scellis.catalog import blocks as B

NAMES = ["weight_ih_l{k}", "weight_hh_l{k}", "bias_ih_l{k}", "bias_hh_l{k}"]


def _names(layers: int) -> list[str]:
    return [n.format(k=k) for k in range(layers) for n in NAMES]


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_two_layers_match_torch(kind):
    rng = rng_for(kind)
    cls, cfg, tcls = (
        (B.LSTM, B.LSTMConfig, torch.nn.LSTM)
        if kind == "lstm"
        else (B.GRU, B.GRUConfig, torch.nn.GRU)
    )
    m = cls(cfg(3, 5, num_layers=2), gen=gen())
    t = tcls(3, 5, num_layers=2, batch_first=True)
    assert [n for n, _ in m.named_parameters()] == _names(2)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    compare(m, t, [rng.standard_normal((2, 6, 3))], f_torch=lambda t, x: t(x)[0], name=kind)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_last_step_output_and_no_bias(kind):
    rng = rng_for(kind + "_last")
    cls, cfg, tcls = (
        (B.LSTM, B.LSTMConfig, torch.nn.LSTM)
        if kind == "lstm"
        else (B.GRU, B.GRUConfig, torch.nn.GRU)
    )
    m = cls(cfg(4, 3, num_layers=1, bias=False, output="last"), gen=gen())
    t = tcls(4, 3, num_layers=1, bias=False, batch_first=True)
    assert [n for n, _ in m.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    out = compare(
        m,
        t,
        [rng.standard_normal((3, 5, 4))],
        f_torch=lambda t, x: t(x)[0][:, -1],
        name=kind + "_last",
    )
    assert out.shape == (3, 3)


def test_lstm_initial_and_final_state_match_torch():
    rng = rng_for("lstm_state")
    m = B.LSTM(B.LSTMConfig(3, 4, num_layers=2), gen=gen())
    t = torch.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    x, h0, c0 = (
        rng.standard_normal(s).astype(np.float32) for s in [(2, 5, 3), (2, 2, 4), (2, 2, 4)]
    )

    def ours(m, x, h, c):
        seq, (hn, cn) = m.run(x, (h, c))
        return sc.functional.concat([seq.reshape(-1), hn.reshape(-1), cn.reshape(-1)])

    def theirs(t, x, h, c):
        seq, (hn, cn) = t(x, (h, c))
        return torch.cat([seq.reshape(-1), hn.reshape(-1), cn.reshape(-1)])

    compare(m, t, [x, h0, c0], ours, theirs, name="lstm_state")


def test_gru_final_state_matches_torch():
    rng = rng_for("gru_state")
    m = B.GRU(B.GRUConfig(3, 4, num_layers=2), gen=gen())
    t = torch.nn.GRU(3, 4, num_layers=2, batch_first=True)
    x = rng.standard_normal((2, 5, 3))
    compare(m, t, [x], lambda m, x: m.run(x)[1], lambda t, x: t(x)[1], name="gru_state")


def test_init_is_uniform_over_one_over_sqrt_hidden():
    for cls, cfg in ((B.LSTM, B.LSTMConfig), (B.GRU, B.GRUConfig)):
        m = cls(cfg(16, 32, num_layers=2), gen=gen(5))
        for _, p in m.named_parameters():
            check_uniform(p, 1 / math.sqrt(32))


def test_dropout_between_layers_only_in_training():
    rng = rng_for("lstm_dropout")
    x = sc.tensor(rng.standard_normal((2, 4, 3)).astype(np.float32))
    m = B.LSTM(B.LSTMConfig(3, 4, num_layers=2, dropout=0.5), gen=gen())
    plain = B.LSTM(B.LSTMConfig(3, 4, num_layers=2), gen=gen())
    np.testing.assert_array_equal(arr(m.eval()(x)), arr(plain(x)))
    assert not np.allclose(arr(m.train()(x)), arr(plain(x)))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("output", ["sequence", "last"])
def test_bidirectional_matches_torch(kind, output):
    rng = rng_for(f"bi{kind}{output}")
    cls, cfg, tcls = (
        (B.LSTM, B.LSTMConfig, torch.nn.LSTM)
        if kind == "lstm"
        else (B.GRU, B.GRUConfig, torch.nn.GRU)
    )
    m = cls(cfg(3, 4, num_layers=2, output=output, bidirectional=True), gen=gen())
    t = tcls(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    if output == "sequence":
        f = lambda t, x: t(x)[0]  # noqa: E731
    else:  # torch's h_n of the top layer: forward's last step, backward's first
        f = _h_n_top(kind)
    out = compare(m, t, [rng.standard_normal((2, 5, 3))], f_torch=f, name=f"bi{kind}{output}")
    assert out.shape == ((2, 5, 8) if output == "sequence" else (2, 8))


def _h_n_top(kind):
    def f(t, x):
        h = t(x)[1]
        h = h[0] if kind == "lstm" else h
        return torch.cat([h[-2], h[-1]], -1)

    return f


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_bidirectional_unfused_and_final_state(kind):
    cls, cfg, tcls = (
        (B.LSTM, B.LSTMConfig, torch.nn.LSTM)
        if kind == "lstm"
        else (B.GRU, B.GRUConfig, torch.nn.GRU)
    )
    m = cls(cfg(2, 3, bidirectional=True, fused=False), gen=gen())
    t = tcls(2, 3, batch_first=True, bidirectional=True)

    def ours(m, x):
        h = m.run(x)[1]
        return h[0] if kind == "lstm" else h

    def theirs(t, x):
        h = t(x)[1]
        return h[0] if kind == "lstm" else h

    x = rng_for("biun" + kind).standard_normal((2, 4, 2))
    compare(m, t, [x], ours, theirs, name="biun" + kind)
