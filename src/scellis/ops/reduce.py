"""Reductions (ops layer): sum, max, min, argmax over a set of axes, keepdim or not."""

from __future__ import annotations

from ..base.dtypes import bool_, i32
from ..base.errors import DTypeError
from ..base.shapes import norm_axes, reduced_shape
from .table import OpDef, Spec, register


def _reduce(specs, attrs):
    s = specs[0]
    if s.dtype == bool_:
        raise DTypeError("reductions do not take bool tensors; cast first")
    axes = norm_axes(attrs["axes"], len(s.shape))
    return [Spec(reduced_shape(s.shape, axes, attrs["keepdim"]), s.dtype)]


def _arg(specs, attrs):
    s = specs[0]
    axes = norm_axes(attrs["axes"], len(s.shape))
    return [Spec(reduced_shape(s.shape, axes, attrs["keepdim"]), i32)]


register(OpDef("sum", "reduce", 1, _reduce, attrs=("axes", "keepdim"), diff_inputs=(0,)))
register(OpDef("max", "reduce", 1, _reduce, attrs=("axes", "keepdim"), diff_inputs=(0,)))
register(OpDef("min", "reduce", 1, _reduce, attrs=("axes", "keepdim"), diff_inputs=(0,)))
register(
    OpDef(
        "argmax",
        "reduce",
        1,
        _arg,
        attrs=("axes", "keepdim"),
        doc="index of the first maximum along one axis",
    )
)
