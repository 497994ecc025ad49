"""Fused recurrent primitives (ops layer): a whole LSTM layer over time as one op.

``lstm_seq(gx, h0, c0, w_hh)``: gx [B, T, 4H] are the input projections
(x @ W_ih^T + b_ih + b_hh, one matmul outside), w_hh [4H, H], gates in torch's order
i, f, g, o. The result packs every step: Y [T, B, 6H] with Y[t, b] = (h, c, i, f,
g, o) at step t, so the backward needs no recomputation and h_t / c_t are views.

``lstm_seq_backward(gy, y, c0, w_hh)`` walks the steps in reverse and returns a flat
buffer ``[dA (T*B*4H) | slot 0 (2*B*H) | slot 1 (2*B*H)]``: dA are the gradients of
the gate pre-activations; step t leaves its carried (dh, dc) in slot (T-1-t) % 2, so
(dh0, dc0) end in slot (T-1) % 2. dW_hh, dgx and db follow from dA with matmuls.

``gru_seq(gx, h0, w_hh, b_hh)``: gx [B, T, 3H] = x @ W_ih^T + b_ih, gates r, z, n
(torch's order and its n-gate: n = tanh(gx_n + r * (W_hn h + b_hn))). Y [T, B, 5H]
packs (h, r, z, n, hn) with hn = W_hn h_{t-1} + b_hn. ``gru_seq_backward(gy, y, h0,
w_hh)`` returns ``[dA (T*B*4H) | slot 0 (B*H) | slot 1 (B*H)]`` with dA = (da_r, da_z,
da_n, dhn): da_n feeds dgx, dhn the hidden-side weights; dh0 ends in slot (T-1) % 2.
"""

from __future__ import annotations

from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register


def _lstm_dims(gx: Spec, h0: Spec, c0: Spec, w: Spec):
    if len(gx.shape) != 3 or gx.shape[2] % 4:
        raise ShapeError(f"lstm_seq: gate inputs must be [B, T, 4H], got {gx.shape}")
    b, t, h4 = gx.shape
    h = h4 // 4
    if h0.shape != (b, h) or c0.shape != (b, h) or w.shape != (h4, h):
        raise ShapeError(
            f"lstm_seq: h0/c0 must be {(b, h)} and w_hh {(h4, h)}, got "
            f"{h0.shape}, {c0.shape}, {w.shape}"
        )
    if len({gx.dtype, h0.dtype, c0.dtype, w.dtype}) != 1 or not gx.dtype.is_float:
        raise DTypeError("lstm_seq needs float inputs of one dtype")
    return b, t, h


def _lstm_seq(specs, attrs):
    b, t, h = _lstm_dims(*specs)
    return [Spec((t, b, 6 * h), specs[0].dtype)]


def _lstm_seq_backward(specs, attrs):
    gy, y, c0, w = specs
    t, b, h6 = y.shape
    h = h6 // 6
    if gy.shape != y.shape or c0.shape != (b, h) or w.shape != (4 * h, h):
        raise ShapeError("lstm_seq_backward: inconsistent shapes")
    return [Spec((t * b * 4 * h + 4 * b * h,), y.dtype)]


def _gru_seq(specs, attrs):
    gx, h0, w, bh = specs
    if len(gx.shape) != 3 or gx.shape[2] % 3:
        raise ShapeError(f"gru_seq: gate inputs must be [B, T, 3H], got {gx.shape}")
    b, t, h3 = gx.shape
    h = h3 // 3
    if h0.shape != (b, h) or w.shape != (h3, h) or bh.shape != (h3,):
        raise ShapeError(f"gru_seq: h0 must be {(b, h)}, w_hh {(h3, h)}, b_hh {(h3,)}")
    if len({gx.dtype, h0.dtype, w.dtype, bh.dtype}) != 1 or not gx.dtype.is_float:
        raise DTypeError("gru_seq needs float inputs of one dtype")
    return [Spec((t, b, 5 * h), gx.dtype)]


def _gru_seq_backward(specs, attrs):
    gy, y, h0, w = specs
    t, b, h5 = y.shape
    h = h5 // 5
    if gy.shape != y.shape or h0.shape != (b, h) or w.shape != (3 * h, h):
        raise ShapeError("gru_seq_backward: inconsistent shapes")
    return [Spec((t * b * 4 * h + 2 * b * h,), y.dtype)]


def backward_slot(t: int) -> int:
    """Which carry slot of ``lstm_seq_backward``'s output holds (dh0, dc0)."""
    return (t - 1) % 2


register(
    OpDef(
        "lstm_seq",
        "recurrent",
        4,
        _lstm_seq,
        diff_inputs=(0, 1, 2, 3),
        doc="a fused LSTM layer over all time steps; packs (h, c, i, f, g, o)",
    )
)
register(
    OpDef(
        "lstm_seq_backward",
        "recurrent",
        4,
        _lstm_seq_backward,
        doc="reverse-time gradient of lstm_seq's gate pre-activations and carries",
    )
)
register(
    OpDef(
        "gru_seq",
        "recurrent",
        4,
        _gru_seq,
        diff_inputs=(0, 1, 2, 3),
        doc="a fused GRU layer over all time steps; packs (h, r, z, n, hn)",
    )
)
register(
    OpDef(
        "gru_seq_backward",
        "recurrent",
        4,
        _gru_seq_backward,
        doc="reverse-time gradient of gru_seq's gates and carried dh",
    )
)
