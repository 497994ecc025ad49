"""Op cases, windows over time: ``time_unfold`` and its adjoint ``time_fold`` against
torch's ``F.unfold`` and ``F.fold`` (each row's backward runs the other primitive)."""

from __future__ import annotations

from helpers import Case
from inputs import N
from unfold_oracle import torch_time_fold, torch_time_unfold


def _unfold_case(name, shape, size, stride=1, dilation=1, lo=0, hi=0):
    kw = dict(size=size, stride=stride, dilation=dilation, lo=lo, hi=hi)
    return Case(
        name,
        lambda x: x.prim("time_unfold", **kw),
        lambda x: torch_time_unfold(x, **kw),
        [N(shape)],
    )


def _fold_case(name, shape, steps, size, stride=1, dilation=1, lo=0, hi=0):
    kw = dict(size=size, stride=stride, dilation=dilation, lo=lo, hi=hi)
    return Case(
        name,
        lambda g: g.prim("time_fold", steps=steps, **kw),
        lambda g: torch_time_fold(g, steps, **kw),
        [N(shape)],
    )


CASES = [
    # a causal dilated conv's taps (a TCN's): every padding step before the sequence
    _unfold_case("time_unfold_causal", (2, 7, 3), 3, dilation=2, lo=4),
    # strided windows, padding on both sides, one channel
    _unfold_case("time_unfold_strided", (2, 9, 1), 3, stride=2, dilation=2, lo=1, hi=3),
    # one tap per window, stride 3: steps the windows skip get no gradient
    _unfold_case("time_unfold_one_tap", (3, 8, 2), 1, stride=3, hi=1),
    # [B, n, C*size] back to 6 steps: stride 2 leaves the last step unread
    _fold_case("time_fold_strided", (2, 3, 6), 6, 2, stride=2, lo=1),
    _fold_case("time_fold_dilated", (1, 5, 9), 5, 3, dilation=2, lo=2, hi=2),
]
