"""Tensor methods (runtime layer): thin calls into dispatch, views and composites.

Attached to ``Tensor`` here so the class file holds data only. Every method either
dispatches one primitive, makes a view, or calls a composite from ``ops.composites``.
"""

from __future__ import annotations

from collections import OrderedDict

from ..autograd import backward as _run_backward
from ..autograd.rules import VJP
from ..base.dtypes import DType, as_dtype, bool_, f32, i32, promote
from ..base.errors import DTypeError, ScellisError, ShapeError
from ..base.shapes import (
    broadcast_shapes,
    contiguous_strides,
    infer_reshape,
    norm_axes,
    norm_axis,
    reduction_axes,
    view_strides,
)
from ..ops import composites as C
from ..ops.elementwise import BINARY, COMPARE, LOGICAL, UNARY_ANY, UNARY_FLOAT
from ..ops.movement import slice_len
from .dispatch import apply, apply_view
from .tensor import Tensor

# -- constants: python scalars become cached 0-d tensors on the operand's device --
_CONST_CACHE: OrderedDict = OrderedDict()
_CONST_CACHE_SIZE = 512


def _const(value, dtype: DType, device) -> Tensor:
    # repr keeps -0.0 apart from 0.0, which compare (and hash) equal
    key = (id(device), dtype.name, type(value), repr(value))
    t = _CONST_CACHE.get(key)
    if t is None:
        t = apply("full", (), device=device, shape=(), value=value, dtype=dtype.name)
        _CONST_CACHE[key] = t
        if len(_CONST_CACHE) > _CONST_CACHE_SIZE:
            _CONST_CACHE.popitem(last=False)
    else:
        _CONST_CACHE.move_to_end(key)
    return t


def _scalar_dtype(value, like: DType) -> DType:
    if isinstance(value, bool):
        return like if like != bool_ else bool_
    if isinstance(value, int):
        return like if like != bool_ else i32
    return like if like.is_float else f32


def _pair(a, b):
    """Two tensors of one dtype from tensor/scalar operands."""
    if not isinstance(a, Tensor):
        a = _const(a, _scalar_dtype(a, b.dtype), b.device)
    if not isinstance(b, Tensor):
        b = _const(b, _scalar_dtype(b, a.dtype), a.device)
    if a.dtype != b.dtype:
        dt = promote(a.dtype, b.dtype)
        a, b = a.cast(dt), b.cast(dt)
    return a, b


def _broadcast(*ts):
    shape = broadcast_shapes(*(t.shape for t in ts))
    return [t if t.shape == shape else t.expand(shape) for t in ts]


def _binary(op):
    def fn(a, b):
        a, b = _broadcast(*_pair(a, b))
        return apply(op, (a, b))

    fn.__name__ = op
    return fn


def _rbinary(op):
    f = _binary(op)
    return lambda a, b: f(b, a)


def _unary(op):
    def fn(x):
        return apply(op, (x,))

    fn.__name__ = op
    return fn


for _n in UNARY_FLOAT + UNARY_ANY + ("logical_not",):
    setattr(Tensor, _n, _unary(_n))
for _n in BINARY + COMPARE + LOGICAL:
    setattr(Tensor, _n, _binary(_n))

Tensor.__add__, Tensor.__radd__ = _binary("add"), _rbinary("add")
Tensor.__sub__, Tensor.__rsub__ = _binary("sub"), _rbinary("sub")
Tensor.__mul__, Tensor.__rmul__ = _binary("mul"), _rbinary("mul")
_div = _binary("div")  # the div primitive: true division on floats, floor on integers


def _truediv(a, b):
    """``a / b``, torch's true division: two integer (or bool) operands give f32."""
    a, b = _pair(a, b)
    if not a.dtype.is_float:
        a, b = a.cast(f32), b.cast(f32)
    return _div(a, b)


def _floordiv(a, b):
    """``a // b`` on integers: division rounded towards minus infinity (torch, numpy)."""
    a, b = _pair(a, b)
    if a.dtype.is_float:
        raise DTypeError(
            f"// of {a.dtype} tensors is not supported (there is no floor primitive); "
            "divide with / and cast, or use integer tensors"
        )
    return _div(a, b)


Tensor.__truediv__, Tensor.__rtruediv__ = _truediv, lambda a, b: _truediv(b, a)
Tensor.__floordiv__, Tensor.__rfloordiv__ = _floordiv, lambda a, b: _floordiv(b, a)
Tensor.__pow__, Tensor.__rpow__ = _binary("pow"), _rbinary("pow")
Tensor.__eq__, Tensor.__ne__ = _binary("eq"), _binary("ne")
Tensor.__lt__, Tensor.__le__ = _binary("lt"), _binary("le")
Tensor.__gt__, Tensor.__ge__ = _binary("gt"), _binary("ge")
Tensor.__and__, Tensor.__or__ = _binary("logical_and"), _binary("logical_or")
Tensor.__neg__ = _unary("neg")
Tensor.__abs__ = _unary("abs")
Tensor.__invert__ = _unary("logical_not")


def _cast(x, dtype) -> Tensor:
    dt = as_dtype(dtype)
    return x if dt == x.dtype else apply("cast", (x,), dtype=dt.name)


def _clamp(x, min=None, max=None) -> Tensor:
    return apply("clamp", (x,), lo=min, hi=max)


def _where(x, cond, other) -> Tensor:
    """``x`` where ``cond`` holds, else ``other`` (torch's ``Tensor.where``)."""
    x, other = _pair(x, other)
    cond, x, other = _broadcast(cond, x, other)
    return apply("where", (cond, x, other))


def _contiguous(x) -> Tensor:
    return x if x.is_contiguous() else apply("copy", (x,))


# -- views --
def _permute(x, *dims) -> Tensor:
    perm = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
    perm = tuple(norm_axis(p, x.ndim) for p in perm)
    if len(perm) != x.ndim:
        raise ShapeError(f"permute of a {x.ndim}-d tensor needs {x.ndim} dims, got {perm}")
    return apply_view(
        "permute", x, [x.shape[p] for p in perm], [x.strides[p] for p in perm], x.offset, perm=perm
    )


def _transpose(x, a=-2, b=-1) -> Tensor:
    perm = list(range(x.ndim))
    a, b = norm_axis(a, x.ndim), norm_axis(b, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return _permute(x, perm)


def _expand(x, *shape) -> Tensor:
    shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
    lead = len(shape) - x.ndim
    shape = tuple(x.shape[i - lead] if d == -1 else d for i, d in enumerate(shape))
    if shape == x.shape:
        return x
    if lead < 0:
        raise ShapeError(f"cannot expand {x.shape} to {shape}")
    strides = [0] * lead
    for d, n, st in zip(x.shape, shape[lead:], x.strides):
        if d != n and d != 1:
            raise ShapeError(f"cannot expand {x.shape} to {shape}")
        strides.append(st if d == n else 0)
    return apply_view("expand", x, shape, strides, x.offset, shape=shape)


def _reshape(x, *shape) -> Tensor:
    shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
    shape = infer_reshape(x.shape, shape)
    if shape == x.shape:
        return x
    strides = view_strides(x.shape, x.strides, shape)
    if strides is None:
        x = apply("copy", (x,))
        strides = contiguous_strides(shape)
    return apply_view("reshape", x, shape, strides, x.offset, shape=shape)


def _unsqueeze(x, axis: int) -> Tensor:
    axis = axis % (x.ndim + 1)
    return _reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])


def _squeeze(x, axis=None) -> Tensor:
    if axis is None:
        return _reshape(x, tuple(d for d in x.shape if d != 1))
    axes = norm_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ShapeError(f"cannot squeeze dim {a} of size {x.shape[a]}")
    return _reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def _flatten(x, start=0, end=-1) -> Tensor:
    if x.ndim == 0:
        return _reshape(x, (1,))
    s, e = norm_axis(start, x.ndim), norm_axis(end, x.ndim)
    mid = 1
    for d in x.shape[s : e + 1]:
        mid *= d
    return _reshape(x, x.shape[:s] + (mid,) + x.shape[e + 1 :])


def _slice(x, starts, stops, steps=None) -> Tensor:
    steps = list(steps) if steps is not None else [1] * x.ndim
    shape = [slice_len(a, b, s) for a, b, s in zip(starts, stops, steps)]
    offset = x.offset + sum(a * st for a, st in zip(starts, x.strides))
    strides = [st * s for st, s in zip(x.strides, steps)]
    return apply_view(
        "slice",
        x,
        shape,
        strides,
        offset,
        starts=tuple(starts),
        stops=tuple(stops),
        steps=tuple(steps),
    )


def _getitem(x, key) -> Tensor:
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise ShapeError("an index can hold one Ellipsis at most")
    if n_real > x.ndim:
        raise ShapeError(f"too many indices ({n_real}) for a tensor of {x.ndim} dims")
    expanded = []
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (x.ndim - sum(1 for k in expanded if k is not None)))
    starts, stops, steps = [], [], []
    out_shape: list = []  # after slicing: entries are ("keep", dim) or ("new",) markers
    takes = []
    dim = 0
    for k in expanded:
        if k is None:
            out_shape.append(None)
            continue
        size = x.shape[dim]
        if isinstance(k, Tensor):
            if k.dtype not in (i32,) and k.dtype.kind not in "iu":
                raise ShapeError(
                    "tensor indices must be integer tensors (bool masks are not "
                    "supported: their result shape depends on the data)"
                )
            takes.append((len(out_shape), k))
            starts.append(0), stops.append(size), steps.append(1)
            out_shape.append(size)
        elif isinstance(k, slice):
            a, b, s = k.indices(size)
            if s <= 0:
                raise ShapeError("negative slice steps are not supported")
            b = max(a, b)
            starts.append(a), stops.append(b), steps.append(s)
            out_shape.append(slice_len(a, b, s))
        elif isinstance(k, int):
            i = k + size if k < 0 else k
            if not 0 <= i < size:
                raise ShapeError(f"index {k} is out of range for a dim of size {size}")
            starts.append(i), stops.append(i + 1), steps.append(1)
        else:
            raise ShapeError(f"unsupported index {k!r}")
        dim += 1
    y = _slice(x, starts, stops, steps)
    y = _reshape(y, tuple(1 if d is None else d for d in out_shape))
    for pos, idx in reversed(takes):
        y = C.take(y, idx, pos)
    return y


# -- reductions --
def _reducer(op):
    def fn(x, axis=None, keepdim=False):
        return apply(op, (x,), axes=reduction_axes(axis, x.ndim), keepdim=keepdim)

    return fn


def _argmax(x, axis=None, keepdim=False) -> Tensor:
    if axis is None:
        return apply("argmax", (_reshape(x, (-1,)),), axes=(0,), keepdim=False)
    return apply("argmax", (x,), axes=norm_axes(axis, x.ndim), keepdim=keepdim)


# -- layout and indexing --
def _pad(x, lo, hi, interior=None, value=0.0) -> Tensor:
    interior = list(interior) if interior is not None else [0] * x.ndim
    return apply("pad", (x,), lo=tuple(lo), hi=tuple(hi), interior=tuple(interior), value=value)


def _cat(x, others, axis=0) -> Tensor:
    xs = [x, *others]
    axis = norm_axis(axis, x.ndim)
    return apply("concat", tuple(xs), axis=axis)


def _gather(x, idx, axis) -> Tensor:
    return apply("gather", (x, idx), axis=norm_axis(axis, x.ndim))


def _scatter_add(src, idx, axis, shape) -> Tensor:
    return apply("scatter_add", (src, idx), axis=norm_axis(axis, len(shape)), shape=tuple(shape))


def _matmul(a, b) -> Tensor:
    if not isinstance(b, Tensor) or not isinstance(a, Tensor):
        raise ShapeError("matmul needs two tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul does not take 0-d tensors; use *")
    a2 = _unsqueeze(a, 0) if a.ndim == 1 else a
    b2 = _unsqueeze(b, -1) if b.ndim == 1 else b
    if a2.dtype != b2.dtype:
        a2, b2 = _pair(a2, b2)
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = _expand(a2, batch + a2.shape[-2:])
    b2 = _expand(b2, batch + b2.shape[-2:])
    if a2.shape[-1] != b2.shape[-2]:
        raise ShapeError(
            f"matmul: shapes {a.shape} and {b.shape} do not align ({a.shape[-1]} != {b2.shape[-2]})"
        )
    y = apply("matmul", (a2, b2))
    if a.ndim == 1:
        y = _squeeze(y, -2)
    if b.ndim == 1:
        y = _squeeze(y, -1)
    return y


def _full_like(x, value, dtype=None) -> Tensor:
    dt = as_dtype(dtype, x.dtype)
    return apply("full", (), device=x.device, shape=x.shape, value=value, dtype=dt.name)


def _backward(self, gradient=None, retain_graph=False):
    _run_backward(self, gradient, retain_graph=retain_graph, rules=VJP)


_METHODS = {
    "cast": _cast,
    "to": _cast,
    "float": lambda x: _cast(x, f32),
    "clamp": _clamp,
    "where": _where,
    "contiguous": _contiguous,
    "permute": _permute,
    "transpose": _transpose,
    "expand": _expand,
    "reshape": _reshape,
    "view_as": lambda x, o: _reshape(x, o.shape),
    "unsqueeze": _unsqueeze,
    "squeeze": _squeeze,
    "flatten": _flatten,
    "slice": _slice,
    "__getitem__": _getitem,
    "sum": _reducer("sum"),
    "max": _reducer("max"),
    "min": _reducer("min"),
    "amax": _reducer("max"),
    "amin": _reducer("min"),
    "argmax": _argmax,
    "mean": C.mean,
    "var": C.var,
    "std": lambda x, axis=None, keepdim=False, correction=1: C.var(
        x, axis, keepdim, correction
    ).sqrt(),
    "pad": _pad,
    "cat": _cat,
    "gather": _gather,
    "scatter_add": _scatter_add,
    "take": C.take,
    "matmul": _matmul,
    "__matmul__": _matmul,
    "__rmatmul__": lambda a, b: _matmul(b, a),
    "softmax": C.softmax,
    "log_softmax": C.log_softmax,
    "logsumexp": C.logsumexp,
    "gelu": C.gelu,
    "square": lambda x: x * x,
    "full_like": _full_like,
    "zeros_like": lambda x, dtype=None: _full_like(x, 0, dtype),
    "ones_like": lambda x, dtype=None: _full_like(x, 1, dtype),
    "arange_like": lambda x, n: apply(
        "arange", (), device=x.device, n=int(n), dtype=x.dtype.name if x.dtype != bool_ else "i32"
    ),
    "backward": _backward,
    # any primitive by name, for rules and blocks that use fused ops
    "prim": lambda x, op, *others, **attrs: apply(op, (x, *others), **attrs),
}
for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
Tensor.T = property(lambda x: _permute(x, tuple(reversed(range(x.ndim)))))
Tensor.mT = property(lambda x: _transpose(x, -2, -1))

__all__ = ["ScellisError"]
