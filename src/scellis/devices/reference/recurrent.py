"""Reference kernels for the fused recurrent ops (devices layer), step by step in NumPy.

f16 computes as the WebGPU kernels do: inputs widened to f32, each step's maths in f32,
and every stored value (the packed step, gate gradients, carries) rounded to f16 once;
the next step reads the rounded carry back. In f32 and f64 the round trips are exact.
"""

from __future__ import annotations

import numpy as np


def _wide(xs):
    """The inputs as arrays of the compute dtype (f32 for f16) and the storage dtype."""
    arrays = [np.asarray(a) for a in xs]
    store = arrays[0].dtype
    acc = np.float32 if store == np.float16 else store
    return [a.astype(acc, copy=False) for a in arrays], store, acc


def _stored(x, store, acc):
    """``x`` as the kernel's store leaves it: rounded to the storage dtype, read back."""
    return x.astype(store).astype(acc)


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_seq(xs, attrs, out):
    (gx, h0, c0, w), store, acc = _wide(xs)
    b, t, h4 = gx.shape
    h = h4 // 4
    y = np.empty((t, b, 6 * h), dtype=store)
    hp, cp = h0, c0
    for s in range(t):
        a = gx[:, s] + hp @ w.T
        i, f, g, o = (
            _sig(a[:, :h]),
            _sig(a[:, h : 2 * h]),
            np.tanh(a[:, 2 * h : 3 * h]),
            _sig(a[:, 3 * h :]),
        )
        cp = f * cp + i * g
        hp = o * np.tanh(cp)
        y[s] = np.concatenate([hp, cp, i, f, g, o], axis=1)
        hp, cp = y[s, :, :h].astype(acc), y[s, :, h : 2 * h].astype(acc)
    return y


def _lstm_seq_backward(xs, attrs, out):
    (gy, y, c0, w), store, acc = _wide(xs)
    t, b, h6 = y.shape
    h = h6 // 6
    da = np.empty((t, b, 4 * h), dtype=store)
    slots = np.zeros((2, 2, b, h), dtype=store)
    dh_c = np.zeros((b, h), dtype=acc)
    dc_c = np.zeros((b, h), dtype=acc)
    for s in range(t - 1, -1, -1):
        _, c, i, f, g, o = (y[s, :, k * h : (k + 1) * h] for k in range(6))
        gh, gc, gi, gf, gg, go = (gy[s, :, k * h : (k + 1) * h] for k in range(6))
        cprev = c0 if s == 0 else y[s - 1, :, h : 2 * h]
        dh = gh + dh_c
        tc = np.tanh(c)
        dc = gc + dc_c + dh * o * (1 - tc * tc)
        d = np.concatenate(
            [
                (dc * g + gi) * i * (1 - i),
                (dc * cprev + gf) * f * (1 - f),
                (dc * i + gg) * (1 - g * g),
                (dh * tc + go) * o * (1 - o),
            ],
            axis=1,
        )
        da[s] = d
        dh_c, dc_c = _stored(d @ w, store, acc), _stored(dc * f, store, acc)
        slots[(t - 1 - s) % 2] = (dh_c, dc_c)
    return np.concatenate([da.reshape(-1), slots.reshape(-1)])


def _gru_seq(xs, attrs, out):
    (gx, h0, w, bh), store, acc = _wide(xs)
    b, t, h3 = gx.shape
    h = h3 // 3
    y = np.empty((t, b, 5 * h), dtype=store)
    hp = h0
    for s in range(t):
        a = hp @ w.T + bh
        r = _sig(gx[:, s, :h] + a[:, :h])
        z = _sig(gx[:, s, h : 2 * h] + a[:, h : 2 * h])
        hn = a[:, 2 * h :]
        n = np.tanh(gx[:, s, 2 * h :] + r * hn)
        hp = (1 - z) * n + z * hp
        y[s] = np.concatenate([hp, r, z, n, hn], axis=1)
        hp = y[s, :, :h].astype(acc)
    return y


def _gru_seq_backward(xs, attrs, out):
    (gy, y, h0, w), store, acc = _wide(xs)
    t, b, h5 = y.shape
    h = h5 // 5
    da = np.empty((t, b, 4 * h), dtype=store)
    slots = np.zeros((2, b, h), dtype=store)
    carry = np.zeros((b, h), dtype=acc)
    for s in range(t - 1, -1, -1):
        _, r, z, n, hn = (y[s, :, k * h : (k + 1) * h] for k in range(5))
        gh, gr, gz, gn, ghn = (gy[s, :, k * h : (k + 1) * h] for k in range(5))
        hprev = h0 if s == 0 else y[s - 1, :, :h]
        dh = gh + carry
        dn = dh * (1 - z) + gn
        dz = dh * (hprev - n) + gz
        dan = dn * (1 - n * n)
        dr = dan * hn + gr
        dhn = dan * r + ghn
        d = np.concatenate([dr * r * (1 - r), dz * z * (1 - z), dan, dhn], axis=1)
        da[s] = d
        hh = np.concatenate([d[:, : 2 * h], dhn], axis=1)
        carry = _stored(dh * z + hh @ w, store, acc)
        slots[(t - 1 - s) % 2] = carry
    return np.concatenate([da.reshape(-1), slots.reshape(-1)])


KERNELS = {
    "lstm_seq": _lstm_seq,
    "lstm_seq_backward": _lstm_seq_backward,
    "gru_seq": _gru_seq,
    "gru_seq_backward": _gru_seq_backward,
}
