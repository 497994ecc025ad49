"""Op cases, recurrent family: the fused LSTM and GRU layer primitives vs step-by-step torch."""

from __future__ import annotations

import torch

from helpers import Case
from inputs import N
from scellis.runtime.dispatch import apply


def torch_lstm_seq(gx, h0, c0, w):
    """lstm_seq's packed result [T, B, 6H] = (h, c, i, f, g, o) per step, in torch."""
    hidden = h0.shape[-1]
    h, c, steps = h0, c0, []
    for t in range(gx.shape[1]):
        a = gx[:, t] + h @ w.T
        i, f, g, o = a.split(hidden, -1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = f * c + i * g
        h = o * c.tanh()
        steps.append(torch.cat([h, c, i, f, g, o], -1))
    return torch.stack(steps)


def torch_gru_seq(gx, h0, w, bh):
    """gru_seq's packed result [T, B, 5H] = (h, r, z, n, hn) per step, in torch."""
    hidden = h0.shape[-1]
    h, steps = h0, []
    for t in range(gx.shape[1]):
        a = h @ w.T + bh
        xr, xz, xn = gx[:, t].split(hidden, -1)
        ar, az, hn = a.split(hidden, -1)
        r, z = (xr + ar).sigmoid(), (xz + az).sigmoid()
        n = (xn + r * hn).tanh()
        h = (1 - z) * n + z * h
        steps.append(torch.cat([h, r, z, n, hn], -1))
    return torch.stack(steps)


def gru_seq(gx, h0, w, bh):
    return apply("gru_seq", (gx, h0, w, bh))


def lstm_seq(gx, h0, c0, w):
    return apply("lstm_seq", (gx, h0, c0, w))


CASES = [
    # B, T, H = 3, 5, 2 and 1, 7, 3: the cotangent reaches every packed slot of every step
    Case("lstm_seq", lstm_seq, torch_lstm_seq, [N((3, 5, 8)), N((3, 2)), N((3, 2)), N((8, 2))]),
    Case(
        "lstm_seq_1x7",
        lstm_seq,
        torch_lstm_seq,
        [N((1, 7, 12)), N((1, 3)), N((1, 3)), N((12, 3), 0.5)],
    ),
    Case("gru_seq", gru_seq, torch_gru_seq, [N((3, 5, 6)), N((3, 2)), N((6, 2)), N((6,))]),
    Case(
        "gru_seq_1x7",
        gru_seq,
        torch_gru_seq,
        [N((1, 7, 9)), N((1, 3)), N((9, 3), 0.5), N((9,), 0.3)],
    ),
]
