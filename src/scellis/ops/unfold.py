"""Windows over time as columns (ops layer): ``time_unfold`` and its adjoint ``time_fold``.

``time_unfold(x [B, T, C], size, stride, dilation, lo, hi)`` -> [B, n, C*size]: row t
holds every window tap of output step t, column ``c*size + j`` being tap j of channel
c, that is step ``t*stride + j*dilation`` of x padded with ``lo`` zero steps before and
``hi`` after (zero where the tap falls in the padding). The columns are channel-major
so that torch's conv weight [C_out, C_in, k] reshaped to [C_out, C_in*k] lines up with
them as a free view: a conv is then one dense layer over the unfolded input. One
launch, where taps unfolded by pad and concat take one per tap and one for the pad.

``time_fold(g [B, n, C*size], steps=T, ...)`` -> [B, T, C] is its adjoint (its VJP):
each input step gathers the sum of the columns that read it, taps in increasing order
(no atomics, so repeated runs are bitwise equal), one launch.
"""

from __future__ import annotations

from ..base.errors import ShapeError
from .table import OpDef, Spec, register

WINDOW_ATTRS = ("size", "stride", "dilation", "lo", "hi")


def _check_window(attrs) -> None:
    size, stride, dilation, lo, hi = (attrs[a] for a in WINDOW_ATTRS)
    if size < 1 or stride < 1 or dilation < 1 or lo < 0 or hi < 0:
        raise ShapeError(
            f"windows over time need size, stride, dilation >= 1 and lo, hi >= 0, got "
            f"size={size} stride={stride} dilation={dilation} lo={lo} hi={hi}"
        )


def windows(steps: int, attrs) -> int:
    """How many windows fit ``steps`` steps once padded (``ShapeError`` where none)."""
    _check_window(attrs)
    span = attrs["dilation"] * (attrs["size"] - 1) + 1
    padded = steps + attrs["lo"] + attrs["hi"]
    if padded < span:
        raise ShapeError(f"a window of {span} steps does not fit a sequence of {padded}")
    return (padded - span) // attrs["stride"] + 1


def _time_unfold(specs, attrs):
    x = specs[0]
    if len(x.shape) != 3:
        raise ShapeError(f"time_unfold takes [B, T, C], got {x.shape}")
    b, t, c = x.shape
    return [Spec((b, windows(t, attrs), c * attrs["size"]), x.dtype)]


def _time_fold(specs, attrs):
    g = specs[0]
    steps = attrs["steps"]
    if len(g.shape) != 3 or g.shape[2] % attrs["size"] or steps < 0:
        raise ShapeError(f"time_fold takes [B, n, C*size] (size {attrs['size']}), got {g.shape}")
    if g.shape[1] != windows(steps, attrs):
        raise ShapeError(
            f"time_fold: {g.shape[1]} windows, but {steps} steps make {windows(steps, attrs)}"
        )
    return [Spec((g.shape[0], steps, g.shape[2] // attrs["size"]), g.dtype)]


register(
    OpDef(
        "time_unfold",
        "layout",
        1,
        _time_unfold,
        attrs=WINDOW_ATTRS,
        diff_inputs=(0,),
        doc="the taps of every window over time of [B, T, C] as [B, n, C*size] columns",
    )
)
register(
    OpDef(
        "time_fold",
        "layout",
        1,
        _time_fold,
        attrs=(*WINDOW_ATTRS, "steps"),
        diff_inputs=(0,),
        doc="time_unfold's adjoint: each of the steps [B, T, C] sums the columns that read it",
    )
)
