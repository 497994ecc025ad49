"""Movement primitives (ops layer).

View ops (permute, expand, reshape, slice) only change shape, strides and offset; the
runtime applies them without a device. Layout ops (pad, concat) make new buffers.
"""

from __future__ import annotations

from ..base.errors import ShapeError
from ..base.shapes import infer_reshape
from .table import OpDef, Spec, register


def _permute(specs, attrs):
    s = specs[0]
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(len(s.shape))):
        raise ShapeError(f"permute: {perm} is not a permutation of {len(s.shape)} dims")
    return [Spec(tuple(s.shape[p] for p in perm), s.dtype)]


def _expand(specs, attrs):
    s = specs[0]
    shape = tuple(attrs["shape"])
    if len(shape) < len(s.shape):
        raise ShapeError(f"expand: cannot expand {s.shape} to fewer dims {shape}")
    lead = len(shape) - len(s.shape)
    for d, n in zip(s.shape, shape[lead:]):
        if d != n and d != 1:
            raise ShapeError(f"expand: cannot expand {s.shape} to {shape}")
    return [Spec(shape, s.dtype)]


def _reshape(specs, attrs):
    s = specs[0]
    return [Spec(infer_reshape(s.shape, attrs["shape"]), s.dtype)]


def slice_len(start: int, stop: int, step: int) -> int:
    return max(0, (stop - start + step - 1) // step)


def _slice(specs, attrs):
    s = specs[0]
    starts, stops, steps = attrs["starts"], attrs["stops"], attrs["steps"]
    if not len(starts) == len(stops) == len(steps) == len(s.shape):
        raise ShapeError("slice needs one (start, stop, step) per dim")
    out = []
    for d, a, b, st in zip(s.shape, starts, stops, steps):
        if st <= 0 or not 0 <= a <= d or not 0 <= b <= d:
            raise ShapeError(f"slice {a}:{b}:{st} is out of range for a dim of {d}")
        out.append(slice_len(a, b, st))
    return [Spec(tuple(out), s.dtype)]


def _pad(specs, attrs):
    s = specs[0]
    lo, hi, interior = attrs["lo"], attrs["hi"], attrs["interior"]
    if not len(lo) == len(hi) == len(interior) == len(s.shape):
        raise ShapeError("pad needs one (lo, hi, interior) per dim")
    if min(lo + hi + interior, default=0) < 0:
        raise ShapeError("pad widths must be >= 0")
    out = tuple(a + b + d + max(d - 1, 0) * i for d, a, b, i in zip(s.shape, lo, hi, interior))
    return [Spec(out, s.dtype)]


def _concat(specs, attrs):
    axis = attrs["axis"]
    first = specs[0]
    total = 0
    for s in specs:
        if s.dtype != first.dtype or len(s.shape) != len(first.shape):
            raise ShapeError("concat inputs differ in dtype or rank")
        for i, (a, b) in enumerate(zip(s.shape, first.shape)):
            if i != axis and a != b:
                raise ShapeError(
                    f"concat: shapes {first.shape} and {s.shape} differ off axis {axis}"
                )
        total += s.shape[axis]
    shape = list(first.shape)
    shape[axis] = total
    return [Spec(tuple(shape), first.dtype)]


register(OpDef("permute", "view", 1, _permute, attrs=("perm",), diff_inputs=(0,), is_view=True))
register(OpDef("expand", "view", 1, _expand, attrs=("shape",), diff_inputs=(0,), is_view=True))
register(
    OpDef(
        "reshape",
        "view",
        1,
        _reshape,
        attrs=("shape",),
        diff_inputs=(0,),
        is_view=True,
        doc="a view; the runtime copies first when the strides do not allow one",
    )
)
register(
    OpDef(
        "slice",
        "view",
        1,
        _slice,
        attrs=("starts", "stops", "steps"),
        diff_inputs=(0,),
        is_view=True,
    )
)
register(
    OpDef(
        "pad",
        "layout",
        1,
        _pad,
        attrs=("lo", "hi", "interior", "value"),
        diff_inputs=(0,),
        doc="XLA-style pad: edge and interior padding",
    )
)
register(OpDef("concat", "layout", -1, _concat, attrs=("axis",), diff_inputs=(-1,)))
