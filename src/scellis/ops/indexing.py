"""Index primitives (ops layer): gather and its transpose scatter_add, torch semantics.

``gather(x, idx, axis)``: ``out[..i..] = x[..idx[..i..] at axis..]``, idx the rank of x.
``scatter_add(src, idx, axis, shape)``: zeros of ``shape``, then ``src`` added at idx;
devices must sum in a fixed order (no float atomics) for the debug tier.
"""

from __future__ import annotations

from ..base.dtypes import i32, u32
from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register


def _check_idx(x: Spec, idx: Spec, axis: int, what: str):
    if idx.dtype not in (i32, u32):
        raise DTypeError(f"{what} indices must be i32, got {idx.dtype}")
    if len(idx.shape) != len(x.shape):
        raise ShapeError(
            f"{what}: index rank {len(idx.shape)} differs from input rank {len(x.shape)}"
        )
    for i, (a, b) in enumerate(zip(idx.shape, x.shape)):
        if i != axis and a > b:
            raise ShapeError(f"{what}: index shape {idx.shape} exceeds {x.shape} off axis {axis}")


def _gather(specs, attrs):
    x, idx = specs
    _check_idx(x, idx, attrs["axis"], "gather")
    return [Spec(idx.shape, x.dtype)]


def _scatter_add(specs, attrs):
    src, idx = specs
    shape = tuple(attrs["shape"])
    if src.shape != idx.shape:
        raise ShapeError(f"scatter_add: source {src.shape} and index {idx.shape} differ")
    _check_idx(Spec(shape, src.dtype), idx, attrs["axis"], "scatter_add")
    return [Spec(shape, src.dtype)]


register(OpDef("gather", "index", 2, _gather, attrs=("axis",), diff_inputs=(0,)))
register(OpDef("scatter_add", "index", 2, _scatter_add, attrs=("axis", "shape"), diff_inputs=(0,)))
