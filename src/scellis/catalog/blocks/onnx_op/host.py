"""Small host arrays (catalog layer): shape arithmetic computed in plain Python.

ONNX graphs compute reshape targets, split sizes and masks from ``Shape`` of
activations. Shapes are host metadata on every device, so that arithmetic runs here,
on flat Python lists, never as device work (no readback, the same in a browser). The
importer folds the same functions over constants.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from ....base.errors import ScellisError

# the most elements a host array may hold: shape tables and masks are small, and a few
# bytes of graph must not expand into gigabytes of Python numbers
MAX_ELEMENTS = 1 << 22
FLOAT = "f32"


@dataclass(frozen=True)
class Host:
    """A row-major array: ``dtype`` is f32, i64 or bool."""

    dtype: str
    shape: tuple
    values: tuple

    @property
    def numel(self) -> int:
        return len(self.values)

    def ints(self) -> list[int]:
        return [int(v) for v in self.values]

    def scalar(self):
        if len(self.values) != 1:
            raise ScellisError(f"expected one value, got shape {list(self.shape)}")
        return self.values[0]


def check_size(shape) -> tuple:
    """``shape`` as ints, refused before any list of that many values is built."""
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape) or math.prod(shape) > MAX_ELEMENTS:
        raise ScellisError(
            f"shape {list(shape)} would fold a constant of {math.prod(shape)} elements "
            f"(at most {MAX_ELEMENTS}: a constant that large is not graph structure)"
        )
    return shape


def make(dtype: str, shape, values) -> Host:
    shape = check_size(shape)
    values = tuple(values)
    if len(values) != math.prod(shape):
        raise ScellisError(f"{len(values)} values for shape {list(shape)}")
    return Host(dtype, shape, values)


def vector(values, dtype: str = "i64") -> Host:
    return make(dtype, (len(values),), values)


def strides(shape) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return out[::-1]


def broadcast_shape(a, b) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise ScellisError(f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(y if x == 1 else x)
    return tuple(out)


def expand_to(h: Host, shape) -> list:
    """``h``'s values broadcast to ``shape`` (row-major)."""
    shape = check_size(shape)
    if h.shape == shape:
        return list(h.values)
    lead = (1,) * (len(shape) - len(h.shape)) + h.shape
    st = strides(lead)
    st = [0 if d == 1 else s for d, s in zip(lead, st)]
    return [h.values[sum(i * s for i, s in zip(idx, st))]
            for idx in itertools.product(*map(range, shape))]  # fmt: skip


def _idiv(x, y):
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q  # ONNX integer Div truncates toward zero


def _fmod(x, y, is_int):
    return x - y * math.floor(x / y) if is_int else math.fmod(x, y)


BINARY = {
    "Add": lambda x, y, i: x + y,
    "Sub": lambda x, y, i: x - y,
    "Mul": lambda x, y, i: x * y,
    "Div": lambda x, y, i: _idiv(x, y) if i else (x / y if y else math.copysign(math.inf, x)),
    "Mod": _fmod,
    "Pow": lambda x, y, i: x**y,
    "Max": lambda x, y, i: max(x, y),
    "Min": lambda x, y, i: min(x, y),
    "Equal": lambda x, y, i: x == y,
    "Less": lambda x, y, i: x < y,
    "Greater": lambda x, y, i: x > y,
    "LessOrEqual": lambda x, y, i: x <= y,
    "GreaterOrEqual": lambda x, y, i: x >= y,
    "And": lambda x, y, i: bool(x) and bool(y),
    "Or": lambda x, y, i: bool(x) or bool(y),
}
_BOOL_OUT = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or"}

UNARY = {
    "Sqrt": math.sqrt, "Neg": lambda x: -x, "Abs": abs, "Floor": math.floor,
    "Ceil": math.ceil, "Not": lambda x: not x, "Exp": math.exp, "Reciprocal": lambda x: 1 / x,
    "IsNaN": lambda x: x != x, "Identity": lambda x: x,
}  # fmt: skip


def binary(op: str, a: Host, b: Host) -> Host:
    shape = broadcast_shape(a.shape, b.shape)
    is_int = a.dtype == b.dtype == "i64"
    f = BINARY[op]
    out = [f(x, y, is_int) for x, y in zip(expand_to(a, shape), expand_to(b, shape))]
    dtype = "bool" if op in _BOOL_OUT else ("i64" if is_int else FLOAT)
    return make(dtype, shape, out)


def unary(op: str, a: Host) -> Host:
    out = [UNARY[op](v) for v in a.values]
    dtype = "bool" if op in ("Not", "IsNaN") else a.dtype
    if op in ("Floor", "Ceil") and a.dtype == FLOAT:
        out = [float(v) for v in out]
    return make(dtype, a.shape, out)


def cast(a: Host, to: str) -> Host:
    conv = {"i64": int, "bool": bool, FLOAT: float}[to]
    return make(to, a.shape, [conv(v) for v in a.values])


def take(a: Host, axis: int, index: list[int]) -> Host:
    """Entries ``index`` (one list, flattened) along ``axis``; the axis becomes len(index)."""
    axis %= max(1, len(a.shape))
    n = a.shape[axis]
    index = [i + n if i < 0 else i for i in index]
    outer, inner = math.prod(a.shape[:axis]), math.prod(a.shape[axis + 1 :])
    check_size((outer, len(index), inner))
    vals = a.values
    out = [vals[(o * n + i) * inner + k] for o in range(outer) for i in index for k in range(inner)]
    return make(a.dtype, a.shape[:axis] + (len(index),) + a.shape[axis + 1 :], out)


def gather(a: Host, axis: int, idx: Host) -> Host:
    axis %= max(1, len(a.shape))
    got = take(a, axis, idx.ints())
    return make(a.dtype, a.shape[:axis] + idx.shape + a.shape[axis + 1 :], got.values)


def concat(parts: list[Host], axis: int) -> Host:
    axis %= len(parts[0].shape)
    outer = math.prod(parts[0].shape[:axis])
    rows = [math.prod(p.shape[axis:]) for p in parts]
    out = []
    for o in range(outer):
        for p, r in zip(parts, rows):
            out.extend(p.values[o * r : (o + 1) * r])
    shape = list(parts[0].shape)
    shape[axis] = sum(p.shape[axis] for p in parts)
    return make(parts[0].dtype, shape, out)


def reshape_target(shape, target: list[int], allowzero: bool = False) -> tuple:
    """ONNX Reshape's target: 0 copies the input's dim (unless allowzero), -1 is inferred."""
    dims = [shape[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if dims.count(-1) > 1:
        raise ScellisError(f"reshape target {target} has more than one -1")
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        dims[dims.index(-1)] = math.prod(shape) // known if known else 0
    if math.prod(dims) != math.prod(shape):
        raise ScellisError(f"cannot reshape {list(shape)} to {target}")
    return tuple(dims)


def slice_bounds(shape, starts, ends, axes, steps) -> list[tuple[int, int, int]]:
    """ONNX Slice's clamped (start, stop, step) on every axis (step > 0 only)."""
    out = [(0, d, 1) for d in shape]
    axes = list(axes) if axes is not None else list(range(len(starts)))
    steps = list(steps) if steps is not None else [1] * len(starts)
    for a, s, e, st in zip(axes, starts, ends, steps):
        a %= len(shape)
        n = shape[a]
        if st <= 0:
            raise ScellisError("a Slice with a step below 1 is not supported")
        s = min(n, max(0, s + n if s < 0 else s))
        e = min(n, max(0, e + n if e < 0 else e))
        out[a] = (s, max(s, e), st)
    return out


def slice_(a: Host, bounds) -> Host:
    ranges = [range(s, e, st) for s, e, st in bounds]
    st = strides(a.shape)
    out = [a.values[sum(i * s for i, s in zip(idx, st))] for idx in itertools.product(*ranges)]
    return make(a.dtype, [len(r) for r in ranges], out)


def transpose(a: Host, perm) -> Host:
    shape = [a.shape[p] for p in perm]
    st = strides(a.shape)
    pst = [st[p] for p in perm]
    out = [a.values[sum(i * s for i, s in zip(idx, pst))]
           for idx in itertools.product(*map(range, shape))]  # fmt: skip
    return make(a.dtype, shape, out)


def where(c: Host, a: Host, b: Host) -> Host:
    shape = broadcast_shape(broadcast_shape(c.shape, a.shape), b.shape)
    vals = zip(expand_to(c, shape), expand_to(a, shape), expand_to(b, shape))
    dtype = a.dtype if a.dtype == b.dtype else FLOAT
    return make(dtype, shape, [x if k else y for k, x, y in vals])


def trilu(a: Host, k: int, upper: bool) -> Host:
    rows, cols = a.shape[-2:]
    zero = False if a.dtype == "bool" else 0
    out = []
    for n, v in enumerate(a.values):
        i, j = (n // cols) % rows, n % cols
        out.append(v if ((j - i >= k) if upper else (j - i <= k)) else zero)
    return make(a.dtype, a.shape, out)


def arange(start, limit, delta, dtype: str) -> Host:
    n = max(0, math.ceil((limit - start) / delta))
    check_size((n,))
    return make(dtype, (n,), [start + i * delta for i in range(n)])


def gather_nd(a: Host, idx: Host) -> Host:
    """ONNX GatherND with batch_dims 0: each index row picks an element or a slice."""
    k = idx.shape[-1]
    rows = math.prod(idx.shape[:-1])
    inner = math.prod(a.shape[k:])
    check_size((rows, inner))
    st = strides(a.shape[:k])
    vals, out = idx.ints(), []
    for r in range(rows):
        at = [i + n if i < 0 else i for i, n in zip(vals[r * k : (r + 1) * k], a.shape)]
        base = sum(i * s for i, s in zip(at, st)) * inner
        out.extend(a.values[base : base + inner])
    return make(a.dtype, idx.shape[:-1] + a.shape[k:], out)
