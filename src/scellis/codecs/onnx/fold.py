"""Constant and shape folding for the ONNX importer (codecs layer).

Exporters compute attention's reshape targets, its scale and its causal mask from
``Shape`` of activations: Gather/Slice of shape vectors, integer Div, Cast, Sqrt,
Expand of a constant to [T, S], Trilu, Equal, Where. When every input is a known
constant (or a shape vector whose dims are all known), these run here on plain Python
lists, so the pattern rules downstream see numbers, not subgraphs. Broadcasting is
limited to what those subgraphs use: equal shapes, or one side a single element.

A model exported with a free sequence length builds its [T, S] mask from symbolic
dims; that mask is a ``grid``: a function of (row, column) composed node by node
(Expand, Trilu, Equal, Where, Slice of a table), evaluated on a probe square where it
meets the attention scores.
"""

from __future__ import annotations

import math

from ...base.errors import ScellisError
from ..raw import from_values, numel
from .values import Const, Partial, ShapeVec

_INT = ("I64", "I32", "I16", "I8", "U8")


# the most elements a folded constant may take: masks and shape tables are small, and a
# few bytes of graph must not expand into gigabytes of Python numbers
MAX_FOLD = 1 << 22


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


# the side of the square a symbolic [T, T] mask built from Expand/Trilu is checked on (a
# table cut to [:T, :T] is checked whole); a mask that departs from causal only past
# this many positions would pass, and no torch mask subgraph we know of does that
PROBE = 64


def grid(dims: list, f, limit: int | None = None) -> Partial:
    """A [T, S] constant of symbolic size: ``f(i, j)``, defined for i, j < ``limit``."""
    return Partial("grid", None, {"dims": list(dims), "f": f, "limit": limit})


def grid_values(g: Partial) -> tuple[list, int]:
    """The grid on its probe square: row-major values and the side."""
    n = g.data["limit"] or PROBE
    f = g.data["f"]
    return [f(i, j) for i in range(n) for j in range(n)], n


def _grid_op(node, a, b):
    """Equal / Where-style folding where one side is a grid (the others scalars)."""
    fa = a.data["f"] if isinstance(a, Partial) else (lambda i, j, v=a.scalar(): v)
    fb = b.data["f"] if isinstance(b, Partial) else (lambda i, j, v=b.scalar(): v)
    return fa, fb


def expand(imp, node):
    c, shape = imp.get(node.inputs[0]), known(imp.get(node.inputs[1]))
    if isinstance(c, Const) and c.t.numel == 1 and isinstance(shape, ShapeVec):
        if len(shape.dims) == 2:
            v = c.scalar()
            return [grid(shape.dims, lambda i, j: v)]
    if not (isinstance(c, Const) and isinstance(shape, Const) and c.t.numel == 1):
        raise ScellisError(f"{node.label()}: Expand other than of one constant to a known shape")
    dims = tuple(int(d) for d in shape.values)
    n = numel(dims)
    if any(d < 0 for d in dims) or n > MAX_FOLD:
        raise ScellisError(
            f"{node.label()}: Expand to {list(dims)} would fold a constant of {n} elements "
            f"(at most {MAX_FOLD}: a constant that large is not graph structure)"
        )
    return [Const(from_values(c.t.dtype, dims, c.values * n))]


def trilu(imp, node):
    c = imp.get(node.inputs[0])
    k = int(imp.get(node.inputs[1]).scalar()) if len(node.inputs) > 1 and node.inputs[1] else 0
    if isinstance(c, Partial) and c.kind == "grid":
        f, up = c.data["f"], bool(node.attrs.get("upper", 1))
        kept = (lambda i, j: j - i >= k) if up else (lambda i, j: j - i <= k)
        return [grid(c.data["dims"], lambda i, j: f(i, j) if kept(i, j) else 0, c.data["limit"])]
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


def equal_grid(node, a, b) -> Partial:
    g = a if isinstance(a, Partial) else b
    fa, fb = _grid_op(node, a, b)
    return grid(g.data["dims"], lambda i, j: fa(i, j) == fb(i, j), g.data["limit"])


def where_grid(node, cond: Partial, a: Const, b: Const) -> Partial:
    fc, (fa, fb) = cond.data["f"], _grid_op(node, a, b)
    return grid(cond.data["dims"], lambda i, j: fa(i, j) if fc(i, j) else fb(i, j),
                cond.data["limit"])  # fmt: skip


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
    first = (not axes or list(axes) == [0]) and int(starts[0]) == 0 and len(starts) == 1
    if first and isinstance(ends[0], str):  # a free sequence length
        return Partial("rows", None, {"w": w.t, "end": ends[0], "node": node, "const": None})
    sliced = slice_const(node, w, starts, ends, axes, steps)
    if not first:
        return sliced
    return Partial("rows", None, {"w": w.t, "end": ends[0], "node": node, "const": sliced})


def table_grid(node, r: Partial, starts, ends, axes, steps) -> Partial:
    """``table[:T, :S]`` with symbolic T, S (a mask buffer cut to the sequence)."""
    if list(axes or []) != [1] or int(starts[0]) != 0 or (steps and list(steps) != [1]):
        raise ScellisError(f"{node.label()}: Slice of a table other than [:T, :S]")
    w = Const(r.data["w"])
    n_rows, n_cols = w.t.shape
    vals = w.values
    return grid([r.data["end"], ends[0]], lambda i, j: vals[i * n_cols + j], min(n_rows, n_cols))
