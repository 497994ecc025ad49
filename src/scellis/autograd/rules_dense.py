"""VJP rule of the fused dense layer (autograd layer): one backward primitive, then matmuls.

``dense_act_backward`` turns the cotangent and the saved pre-activation into the
pre-activation's gradient d and the bias gradient in one pass; the input's and the
weight's gradients are then d @ w and d^T @ x (the weight's comes out contiguous).
"""

from __future__ import annotations

from ..ops.dense import ACTIVATION_GRAD_OPS

DENSE_SAVES = frozenset({"dense_act"})


def _activation_grad(act: str, pre, y, g):
    """The pre-activation's gradient from the saved pre-activation and activation, in
    the unfused activation's own gradient op."""
    if act in ACTIVATION_GRAD_OPS:
        return pre.prim(ACTIVATION_GRAD_OPS[act], g)
    return g * (1.0 - y * y)  # tanh


def _split_backward(node, g):
    """The backward as separate launches, where one launch per column reduction leaves a
    GPU idle (``split_backward``): the activation's gradient, then the tier's column
    sum for the bias. The forward stays one launch."""
    y = node.saved["out"]
    if node.attrs["act"] == "none":
        d = g[0].contiguous()
    else:
        d = _activation_grad(node.attrs["act"], y[1], y[0], g[0].contiguous())
    return d, (d.sum(0) if node.needs[2] else None)


def _with_matmul_grads(node, d, db) -> tuple:
    """(dx, dw, db) from the pre-activation's gradient d: d @ w and d^T @ x."""
    x, w, _ = node.inputs
    dx = d @ w.detach() if node.needs[0] else None
    dw = d.mT @ x.detach() if node.needs[1] else None
    return dx, dw, db


def _dense_act(node, g):
    y = node.saved["out"]
    m, n = y.shape[1:]
    if node.attrs.get("split_backward") or node.attrs["act"] == "none":
        return _with_matmul_grads(node, *_split_backward(node, g))
    flat = g.contiguous().prim("dense_act_backward", y, act=node.attrs["act"])
    d = flat[0 : m * n].reshape(m, n)
    db = flat[m * n : m * n + n] if node.needs[2] else None
    return _with_matmul_grads(node, d, db)


def split_activation_vjp(node, g):
    """The VJP of a fused dense layer taken as one node with its activation's result
    (``catalog.blocks.common``, a GPU's split backward): ``g`` is that result's
    cotangent as it is, where the packed result's would be it padded with a zero slot
    (a launch a layer); the saved pre-activation ``node.saved["pre"]``."""
    d = node.saved["pre"].prim(ACTIVATION_GRAD_OPS[node.attrs["act"]], g.contiguous())
    return _with_matmul_grads(node, d, d.sum(0) if node.needs[2] else None)


DENSE_VJP = {"dense_act": _dense_act}
# x is read for the weight's gradient, w for the input's; the bias only for its shape
DENSE_READS = {"dense_act": lambda needs, attrs: (needs[1], needs[0], False)}
