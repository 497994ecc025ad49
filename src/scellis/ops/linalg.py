"""Matrix multiply (ops layer): batched, batch dims already broadcast by the runtime."""

from __future__ import annotations

from ..base.errors import DTypeError, ShapeError
from .table import OpDef, Spec, register


def _matmul(specs, attrs):
    a, b = specs
    if a.dtype != b.dtype or not a.dtype.is_float:
        raise DTypeError(f"matmul needs two float tensors of one dtype, got {a.dtype}, {b.dtype}")
    if len(a.shape) < 2 or len(b.shape) != len(a.shape):
        raise ShapeError(
            f"matmul primitive needs equal-rank >=2-D inputs, got {a.shape}, {b.shape}"
        )
    if a.shape[:-2] != b.shape[:-2]:
        raise ShapeError(f"matmul batch dims differ: {a.shape[:-2]} vs {b.shape[:-2]}")
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: inner dims differ, {a.shape} @ {b.shape}")
    return [Spec(a.shape[:-1] + (b.shape[-1],), a.dtype)]


register(OpDef("matmul", "matmul", 2, _matmul, diff_inputs=(0, 1)))
