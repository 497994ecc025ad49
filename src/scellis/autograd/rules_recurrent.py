"""VJP rules of the fused recurrent ops (autograd layer).

The reverse-time walk is one primitive (``lstm_seq_backward``); the weight gradient
is then one matmul over all steps, and dgx a view of the gate gradients.
"""

from __future__ import annotations

from ..ops.recurrent import backward_slot

RECURRENT_SAVES = frozenset({"lstm_seq", "gru_seq"})


def _lstm_seq(node, g):
    gx, h0, c0, w = node.inputs
    y = node.saved["out"]
    b, t, h4 = gx.shape
    h = h4 // 4
    flat = g.prim("lstm_seq_backward", y, c0.detach(), w.detach())
    n = t * b * h4
    da = flat[0:n].reshape(t, b, h4)
    base = n + backward_slot(t) * 2 * b * h
    dh0 = flat[base : base + b * h].reshape(b, h)
    dc0 = flat[base + b * h : base + 2 * b * h].reshape(b, h)
    h_prev = h0.detach().unsqueeze(0)
    if t > 1:
        h_prev = h_prev.cat([y[0 : t - 1, :, 0:h]], 0)
    dw = da.reshape(t * b, h4).mT @ h_prev.reshape(t * b, h) if node.needs[3] else None
    return da.permute(1, 0, 2), dh0, dc0, dw


def _gru_seq(node, g):
    gx, h0, w, _ = node.inputs
    y = node.saved["out"]
    b, t, h3 = gx.shape
    h = h3 // 3
    flat = g.prim("gru_seq_backward", y, h0.detach(), w.detach())
    n = t * b * 4 * h
    da = flat[0:n].reshape(t, b, 4 * h)
    base = n + backward_slot(t) * b * h
    dh0 = flat[base : base + b * h].reshape(b, h)
    # the hidden side sees (da_r, da_z, dhn); the input side (da_r, da_z, da_n)
    hidden = da[:, :, 0 : 2 * h].cat([da[:, :, 3 * h : 4 * h]], 2).reshape(t * b, h3)
    h_prev = h0.detach().unsqueeze(0)
    if t > 1:
        h_prev = h_prev.cat([y[0 : t - 1, :, 0:h]], 0)
    dw = hidden.mT @ h_prev.reshape(t * b, h) if node.needs[2] else None
    db = hidden.sum(0) if node.needs[3] else None
    return da[:, :, 0:h3].permute(1, 0, 2), dh0, dw, db


RECURRENT_VJP = {"lstm_seq": _lstm_seq, "gru_seq": _gru_seq}
# the gate pre-activations gx are read for their shape only (the saved result packs the
# gates), and the GRU's hidden bias b_hh not at all (y packs hn = W_hn h + b_hn)
RECURRENT_READS = {
    "lstm_seq": lambda needs, attrs: (False, True, True, True),
    "gru_seq": lambda needs, attrs: (False, True, True, False),
}
