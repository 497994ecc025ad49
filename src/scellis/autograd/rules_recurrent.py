"""VJP rules of the fused recurrent ops (autograd layer).

The reverse-time walk is one primitive (``lstm_seq_backward``); the weight gradient
is then one matmul over all steps, and dgx a view of the gate gradients.
"""

from __future__ import annotations

from ..ops.recurrent import backward_slot

RECURRENT_SAVES = frozenset({"lstm_seq"})


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


RECURRENT_VJP = {"lstm_seq": _lstm_seq}
