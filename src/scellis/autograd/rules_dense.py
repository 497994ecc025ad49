"""VJP rule of the fused dense layer (autograd layer): one backward primitive, then matmuls.

``dense_act_backward`` turns the cotangent and the saved pre-activation into the
pre-activation's gradient d and the bias gradient in one pass; the input's and the
weight's gradients are then d @ w and d^T @ x (the weight's comes out contiguous).
"""

from __future__ import annotations

DENSE_SAVES = frozenset({"dense_act"})


def _dense_act(node, g):
    x, w, _ = node.inputs
    y = node.saved["out"]
    m, n = y.shape[1:]
    flat = g.contiguous().prim("dense_act_backward", y, act=node.attrs["act"])
    d = flat[0 : m * n].reshape(m, n)
    dx = d @ w.detach() if node.needs[0] else None
    dw = d.mT @ x.detach() if node.needs[1] else None
    db = flat[m * n : m * n + n] if node.needs[2] else None
    return dx, dw, db


DENSE_VJP = {"dense_act": _dense_act}
# x is read for the weight's gradient, w for the input's; the bias only for its shape
DENSE_READS = {"dense_act": lambda needs, attrs: (needs[1], needs[0], False)}
