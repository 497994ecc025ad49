"""The fused dense layer (ops layer): matmul, bias and activation as one primitive.

``dense_act(x [M, K], w [N, K], b [N], act=...)`` is ``act(x @ w^T + b)`` in one
kernel, the ``fast`` tier's training form of a dense layer followed by its activation
(``devices.kernel_choice``). Its result packs two [M, N] slots: 0 the activation, 1
the pre-activation, which the backward reads instead of recomputing it; callers take
slot 0. ``dense_act_backward(g, y)`` (g: the packed result's cotangent, y: the packed
result) gives, in one flat buffer, the pre-activation's gradient [M, N] and then the
bias gradient [N] (its column sums): the activation's derivative and the bias sum in
one pass, where the unfused backward takes an activation gradient and a sum. With
``split_backward`` set the VJP takes that activation gradient and sum instead (a GPU,
where one launch per column reduction keeps too few lanes busy); the forward is the
same one kernel either way.
"""

from __future__ import annotations

from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register

# the activations the fused kernel knows (catalog.blocks.common.ACTIVATIONS' names), and
# "none": a dense layer alone, its bias added in the matmul's store; its result has one
# slot (no separate pre-activation) and its backward is always the split one
DENSE_ACTIVATIONS = ("none", "gelu", "gelu_tanh", "relu", "silu", "tanh")
# the activations whose derivative times a cotangent is an elementwise op of (the
# pre-activation, the cotangent): the split backward launches it, the fused backward
# inlines its expression (tanh has none: its derivative reads the activation)
ACTIVATION_GRAD_OPS = {
    "gelu": "gelu_erf_grad",
    "gelu_tanh": "gelu_tanh_grad",
    "silu": "silu_grad",
    "relu": "relu_grad",
}


def _check_act(attrs) -> None:
    if attrs.get("act") not in DENSE_ACTIVATIONS:
        raise ShapeError(
            f"dense_act: act must be one of {DENSE_ACTIVATIONS}, got {attrs.get('act')!r}"
        )


def _dense_act(specs, attrs):
    x, w, b = specs
    _check_act(attrs)
    if not (x.dtype == w.dtype == b.dtype) or x.dtype.name not in ("f32", "f64"):
        raise DTypeError(
            f"dense_act takes f32 (or f64) tensors, got {x.dtype}, {w.dtype}, {b.dtype}"
        )
    if (
        len(x.shape) != 2
        or len(w.shape) != 2
        or w.shape[1] != x.shape[1]
        or b.shape != (w.shape[0],)
    ):
        raise ShapeError(f"dense_act: x {x.shape}, weight {w.shape}, bias {b.shape} do not meet")
    slots = 1 if attrs["act"] == "none" else 2
    return [Spec((slots, x.shape[0], w.shape[0]), x.dtype)]


def _dense_act_backward(specs, attrs):
    g, y = specs
    _check_act(attrs)
    if g.shape != y.shape or len(y.shape) != 3 or y.shape[0] != 2 or g.dtype != y.dtype:
        raise ShapeError(f"dense_act_backward: cotangent {g.shape}, result {y.shape}")
    m, n = y.shape[1:]
    return [Spec((m * n + n,), y.dtype)]


register(
    OpDef(
        "dense_act",
        "matmul",
        3,
        _dense_act,
        attrs=("act", "split_backward"),
        diff_inputs=(0, 1, 2),
        doc="act(x @ w^T + b), packed with its pre-activation: [2, M, N] ([1, M, N] for none)",
    )
)
register(
    OpDef(
        "dense_act_backward",
        "matmul",
        2,
        _dense_act_backward,
        attrs=("act",),
        doc="dense_act's VJP core: the pre-activation's gradient, then the bias gradient",
    )
)
