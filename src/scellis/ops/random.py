"""Creation and Philox primitives (ops layer): ops with no tensor inputs."""

from __future__ import annotations

from ..base.dtypes import as_dtype, bool_, f32
from .table import OpDef, Spec, register


def _full(specs, attrs):
    return [Spec(tuple(attrs["shape"]), as_dtype(attrs["dtype"]))]


def _arange(specs, attrs):
    return [Spec((attrs["n"],), as_dtype(attrs["dtype"]))]


register(OpDef("full", "creation", 0, _full, attrs=("shape", "value", "dtype")))
register(OpDef("arange", "creation", 0, _arange, attrs=("n", "dtype"), doc="0, 1, ..., n-1"))
register(
    OpDef(
        "rand_uniform",
        "random",
        0,
        lambda s, a: [Spec(tuple(a["shape"]), f32)],
        attrs=("shape", "key", "draw", "step"),
        doc="Philox uniform [0,1) f32, element i from block i//4 word i%4",
    )
)
register(
    OpDef(
        "bernoulli",
        "random",
        0,
        lambda s, a: [Spec(tuple(a["shape"]), bool_)],
        attrs=("shape", "key", "draw", "step", "keep"),
        doc="Philox Bernoulli(keep) mask by integer threshold",
    )
)
