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


def _qmatmul(specs, attrs):
    """x [M, K] times a quantised W [rows, cols] (``base.quant``'s layout): x @ W^T
    (K = cols, out [M, rows]), or x @ W with ``trans`` (K = rows, out [M, cols]). The
    scales are one f32 input, or two under double quantisation: their int8 codes (u32
    words) and the f32 scale of each row of 256."""
    x, codes, *scales = specs
    want = ["u32", "f32"] if len(scales) == 2 else ["f32"]
    got = [s.dtype.name for s in scales]
    if not x.dtype.is_float or codes.dtype.name != "u32" or got != want:
        raise DTypeError(
            f"qmatmul takes a float input, u32 codes and f32 scales (or their u32 codes and "
            f"f32 row scales), got {x.dtype}, {codes.dtype}, {', '.join(got)}"
        )
    rows, cols = attrs["rows"], attrs["cols"]
    k, n = (rows, cols) if attrs["trans"] else (cols, rows)
    if len(x.shape) != 2 or x.shape[1] != k:
        raise ShapeError(f"qmatmul: input {x.shape} does not meet a [{rows}, {cols}] weight")
    return [Spec((x.shape[0], n), x.dtype)]


register(
    OpDef(
        "qmatmul",
        "matmul",
        -1,
        _qmatmul,
        attrs=("fmt", "rows", "cols", "block", "trans"),
        diff_inputs=(0,),
        doc="matmul with a quantised frozen weight, dequantised inside the kernel",
    )
)
