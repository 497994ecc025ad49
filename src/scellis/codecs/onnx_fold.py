"""Constant and shape folding for the ONNX importer (codecs layer).

Exporters compute attention's reshape targets, its scale and its causal mask from
``Shape`` of activations: Gather/Slice of shape vectors, integer Div, Cast, Sqrt,
Expand of a constant to [T, S], Trilu, Equal, Where. When every input is a known
constant (or a shape vector whose dims are all known), these run here on plain Python
lists, so the pattern rules downstream see numbers, not subgraphs. Broadcasting is
limited to what those subgraphs use: equal shapes, or one side a single element.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from .onnx_values import Const, Partial, ShapeVec
from .raw import from_values, numel

_INT = ("I64", "I32", "I16", "I8", "U8")


def known(v):
    """A shape vector whose dims are all numbers, as a constant; anything else unchanged."""
    if isinstance(v, ShapeVec) and all(isinstance(d, int) for d in v.dims):
        return Const(from_values("I64", (len(v.dims),), list(v.dims)))
    return v


def _pair(node, a: Const, b: Const):
    va, vb = a.values, b.values
    if len(va) == len(vb):
        shape = a.t.shape if len(a.t.shape) >= len(b.t.shape) else b.t.shape
    elif len(vb) == 1:
        shape, vb = a.t.shape, vb * len(va)
    elif len(va) == 1:
        shape, va = b.t.shape, va * len(vb)
    else:
        raise ScellisError(f"{node.label()}: constants of shapes {a.t.shape} and {b.t.shape}")
    return va, vb, tuple(shape)


def _idiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q  # ONNX integer Div truncates toward zero


_BINARY = {
    "Add": lambda x, y, i: x + y,
    "Sub": lambda x, y, i: x - y,
    "Mul": lambda x, y, i: x * y,
    "Div": lambda x, y, i: _idiv(x, y) if i else x / y,
    "Equal": lambda x, y, i: x == y,
}


def binary(node, a: Const, b: Const) -> Const:
    va, vb, shape = _pair(node, a, b)
    is_int = a.t.dtype in _INT and b.t.dtype in _INT
    out = [_BINARY[node.op](x, y, is_int) for x, y in zip(va, vb)]
    code = "BOOL" if node.op == "Equal" else (a.t.dtype if is_int else "F32")
    return Const(from_values(code, shape, out))


def sqrt(imp, node):
    c = imp.get(node.inputs[0])
    if not isinstance(c, Const):
        raise ScellisError(f"{node.label()}: Sqrt of a model tensor has no catalog block")
    return [Const(from_values("F32", c.t.shape, [math.sqrt(float(v)) for v in c.values]))]


def expand(imp, node):
    c, shape = imp.get(node.inputs[0]), known(imp.get(node.inputs[1]))
    if not (isinstance(c, Const) and isinstance(shape, Const) and c.t.numel == 1):
        raise ScellisError(f"{node.label()}: Expand other than of one constant to a known shape")
    dims = tuple(int(d) for d in shape.values)
    return [Const(from_values(c.t.dtype, dims, c.values * numel(dims)))]


def trilu(imp, node):
    c = imp.get(node.inputs[0])
    k = int(imp.get(node.inputs[1]).scalar()) if len(node.inputs) > 1 and node.inputs[1] else 0
    if not isinstance(c, Const) or len(c.t.shape) != 2:
        raise ScellisError(f"{node.label()}: Trilu other than of a 2-d constant")
    rows, cols = c.t.shape
    upper = bool(node.attrs.get("upper", 1))
    vals = c.values
    zero = False if c.t.dtype == "BOOL" else 0
    out = [
        vals[i * cols + j] if ((j - i >= k) if upper else (j - i <= k)) else zero
        for i in range(rows)
        for j in range(cols)
    ]
    return [Const(from_values(c.t.dtype, c.t.shape, out))]


def where_const(node, cond: Const, a: Const, b: Const) -> Const:
    n = cond.t.numel
    va = a.values * n if a.t.numel == 1 else a.values
    vb = b.values * n if b.t.numel == 1 else b.values
    if len(va) != n or len(vb) != n:
        raise ScellisError(f"{node.label()}: Where of constants of different sizes")
    code = a.t.dtype if a.t.numel != 1 else b.t.dtype
    out = [x if c else y for c, x, y in zip(cond.values, va, vb)]
    return Const(from_values(code, cond.t.shape, out))


def slice_vec(node, dims: list, starts, ends, axes, steps) -> list:
    """Slice of a 1-d vector (a shape or a constant) by constant bounds."""
    if (axes and list(axes) != [0]) or (steps and list(steps) != [1]):
        raise ScellisError(f"{node.label()}: Slice of a vector with axes/steps other than 0/1")
    n = len(dims)
    s, e = int(starts[0]), int(ends[0])
    s, e = max(0, s + n if s < 0 else s), min(n, e + n if e < 0 else e)
    return dims[s:e]


def slice_const(node, c: Const, starts, ends, axes, steps) -> Const:
    """A step-1 Slice of an n-d constant by constant bounds."""
    shape = list(c.t.shape)
    axes = [a % len(shape) for a in (axes or range(len(starts)))]
    if (steps and any(s != 1 for s in steps)) or not all(isinstance(e, int) for e in ends):
        raise ScellisError(f"{node.label()}: Slice of a constant with steps or computed ends")
    lo, hi = [0] * len(shape), list(shape)
    for a, s, e in zip(axes, starts, ends):
        n = shape[a]
        lo[a] = min(n, max(0, s + n if s < 0 else s))
        hi[a] = max(lo[a], min(n, e + n if e < 0 else e))
    vals, out = c.values, []
    strides = [numel(shape[i + 1 :]) for i in range(len(shape))]

    def walk(axis: int, base: int) -> None:
        for i in range(lo[axis], hi[axis]):
            if axis == len(shape) - 1:
                out.append(vals[base + i])
            else:
                walk(axis + 1, base + i * strides[axis])

    if shape:
        walk(0, 0)
    dims = tuple(h - lo_ for lo_, h in zip(lo, hi))
    return Const(from_values(c.t.dtype, dims, out))


def rows(node, w: Const, starts, ends, axes, steps) -> Partial:
    """``weight[:T]`` of a 2-d constant: pending until it is added to a sequence (as a
    learned position table, whose full weight it keeps), else used as the constant."""
    sliced = slice_const(node, w, starts, ends, axes, steps)
    if (axes and list(axes) != [0]) or int(starts[0]) != 0:
        return sliced
    return Partial("rows", None, {"w": w.t, "end": ends[0], "node": node, "const": sliced})
