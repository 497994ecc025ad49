"""ONNX operators over tensors and host arrays (catalog layer): one function per op.

An operator whose inputs are all host arrays (shapes, constants) runs in plain Python
(``host``); otherwise its host inputs become tensors on the block's device and it
runs as tensor methods, so autograd, every device and the planner see ordinary ops.
Each function takes the op's context (device, dtype), its inputs (None where the
node leaves one out), its attributes and the index of the output wanted.
"""

from __future__ import annotations

import math

from ....base.errors import ScellisError
from ....ops import composites as C
from ....runtime.creation import arange, full, tensor
from ....runtime.tensor import Tensor
from . import host as H
from .host import Host

_TENSOR_DTYPE = {"f32": "f32", "i64": "i32", "bool": "bool"}
ONNX_DTYPE = {1: "f32", 6: "i64", 7: "i64", 9: "bool", 10: "f32", 11: "f32"}


def uploaded(v: Host) -> bool:
    """Whether ``as_tensor`` uploads ``v`` as data (not a fill, not a range, not a
    Python scalar operand)."""
    vals = list(v.values)
    if not vals or all(x == vals[0] for x in vals):
        return False
    run = len(v.shape) == 1 and vals == list(range(int(vals[0]), int(vals[0]) + len(vals)))
    return not (v.dtype == "i64" and run)


def as_tensor(ctx, v):
    """A host array on the block's device. Uniform values and 0, 1, 2... runs are made
    by ``full`` and ``arange`` (ops the compiler traces and caches); anything else is
    uploaded as data."""
    if not isinstance(v, Host):
        return v
    kind = _TENSOR_DTYPE[v.dtype]
    dt = ctx["dtype"] if kind == "f32" else kind
    vals = [bool(x) for x in v.values] if kind == "bool" else list(v.values)
    if vals and all(x == vals[0] for x in vals):
        return full(v.shape, vals[0], dt, ctx["device"])
    if kind == "i32" and len(v.shape) == 1 and vals == list(range(vals[0], vals[0] + len(vals))):
        run = arange(len(vals), device=ctx["device"])
        return run + vals[0] if vals[0] else run
    vals = [int(x) for x in vals] if kind == "i32" else vals
    vals = [float(x) for x in vals] if kind == "f32" else vals
    return tensor(vals, device=ctx["device"], dtype=dt).reshape(v.shape)


def _all_host(args) -> bool:
    return all(a is None or isinstance(a, Host) for a in args)


def _ints(v) -> list[int]:
    if isinstance(v, Host):
        return v.ints()
    raise ScellisError("a shape, axis or index input computed on the device (data-dependent)")


def _shape(v) -> tuple:
    return tuple(v.shape)


def _axes(args, attrs, i=1):
    if len(args) > i and args[i] is not None:
        return _ints(args[i])
    got = attrs.get("axes")
    return list(got) if got is not None else None


# -- elementwise ---------------------------------------------------------------------------

_TENSOR_BINARY = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a / b, "Pow": lambda a, b: a.pow(b), "Max": lambda a, b: a.maximum(b),
    "Min": lambda a, b: a.minimum(b), "Equal": lambda a, b: a.eq(b), "Less": lambda a, b: a.lt(b),
    "Greater": lambda a, b: a.gt(b), "LessOrEqual": lambda a, b: a.le(b),
    "GreaterOrEqual": lambda a, b: a.ge(b), "And": lambda a, b: a.logical_and(b),
    "Or": lambda a, b: a.logical_or(b),
}  # fmt: skip


def _scalar_side(ctx, v):
    """A one-element float host value stays a Python number (a scalar operand)."""
    if isinstance(v, Host) and v.numel == 1 and not v.shape and v.dtype == "f32":
        return float(v.values[0])
    return as_tensor(ctx, v)


def binary(op):
    def run(ctx, args, attrs, out):
        a, b = args[0], args[1]
        if _all_host((a, b)):
            return H.binary(op, a, b)
        if op == "Mod":
            raise ScellisError("Mod of model tensors has no tensor form here")
        if isinstance(a, Host) and isinstance(b, Tensor) and a.dtype == "f32":
            a = as_tensor(ctx, a)
        return _TENSOR_BINARY[op](as_tensor(ctx, a), _scalar_side(ctx, b))

    return run


_TENSOR_UNARY = {
    "Sqrt": lambda x: x.sqrt(), "Neg": lambda x: -x, "Abs": lambda x: x.abs(),
    "Exp": lambda x: x.exp(), "Log": lambda x: x.log(), "Tanh": lambda x: x.tanh(),
    "Sigmoid": lambda x: x.sigmoid(), "Relu": lambda x: x.relu(), "Erf": lambda x: x.erf(),
    "Not": lambda x: x.logical_not(), "IsNaN": lambda x: x.ne(x),
    "Reciprocal": lambda x: 1.0 / x, "Identity": lambda x: x, "Softplus": lambda x: x.softplus(),
}  # fmt: skip


def unary(op):
    def run(ctx, args, attrs, out):
        if isinstance(args[0], Host) and op in H.UNARY:
            return H.unary(op, args[0])
        return _TENSOR_UNARY[op](as_tensor(ctx, args[0]))

    return run


def dropout(ctx, args, attrs, out):
    if out:
        raise ScellisError("a Dropout mask is used; only its output is supported")
    return args[0]


def gelu(ctx, args, attrs, out):
    x = as_tensor(ctx, args[0])
    return x.gelu_tanh() if attrs.get("approximate") == "tanh" else x.gelu_erf()


def cast(ctx, args, attrs, out):
    to = ONNX_DTYPE.get(attrs.get("to"))
    if to is None:
        raise ScellisError(f"Cast to ONNX type {attrs.get('to')} is not supported")
    if isinstance(args[0], Host):
        return H.cast(args[0], to)
    x = args[0]
    return x.cast(ctx["dtype"] if to == "f32" else _TENSOR_DTYPE[to])


def where(ctx, args, attrs, out):
    c, a, b = args
    if _all_host(args):
        return H.where(c, a, b)
    a, b = as_tensor(ctx, a), _scalar_side(ctx, b)
    return a.where(as_tensor(ctx, c), b)


# -- nn --------------------------------------------------------------------------------------


def matmul(ctx, args, attrs, out):
    return as_tensor(ctx, args[0]) @ as_tensor(ctx, args[1])


def gemm(ctx, args, attrs, out):
    a, b = as_tensor(ctx, args[0]), as_tensor(ctx, args[1])
    a = a.mT if attrs.get("transA", 0) else a
    b = b.mT if attrs.get("transB", 0) else b
    y = a @ b
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    y = y if alpha == 1.0 else y * alpha
    if len(args) > 2 and args[2] is not None:
        c = as_tensor(ctx, args[2])
        y = y + (c if beta == 1.0 else c * beta)
    return y


def softmax(ctx, args, attrs, out):
    return as_tensor(ctx, args[0]).softmax(attrs.get("axis", -1))


def log_softmax(ctx, args, attrs, out):
    return as_tensor(ctx, args[0]).log_softmax(attrs.get("axis", -1))


def layer_norm(ctx, args, attrs, out):
    if out:
        raise ScellisError("LayerNormalization's mean or inverse deviation output is used")
    x = as_tensor(ctx, args[0])
    axis = attrs.get("axis", -1) % x.ndim
    w = as_tensor(ctx, args[1])
    b = as_tensor(ctx, args[2]) if len(args) > 2 and args[2] is not None else None
    return C.layer_norm(x, tuple(x.shape[axis:]), w, b, attrs.get("epsilon", 1e-5))


def _reduce(kind):
    def run(ctx, args, attrs, out):
        x = as_tensor(ctx, args[0])
        axes = _axes(args, attrs)
        keep = bool(attrs.get("keepdims", 1))
        if axes is None or not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.ndim))
        axes = tuple(a % x.ndim for a in axes)
        if kind == "mean":
            return x.mean(axes, keep)
        return x.sum(axes, keep) if kind == "sum" else x.amax(axes, keep)

    return run


# -- shapes and movement -------------------------------------------------------------------


def shape(ctx, args, attrs, out):
    dims = list(_shape(args[0]))
    s, e = attrs.get("start", 0), attrs.get("end", len(dims))
    return H.vector(dims[slice(s, e)])


def transpose(ctx, args, attrs, out):
    x = args[0]
    perm = attrs.get("perm") or list(reversed(range(len(_shape(x)))))
    if isinstance(x, Host):
        return H.transpose(x, perm)
    return x.permute(*perm)


def reshape(ctx, args, attrs, out):
    x = args[0]
    try:
        dims = H.reshape_target(_shape(x), _ints(args[1]), bool(attrs.get("allowzero", 0)))
    except ScellisError as e:
        raise ScellisError(
            f"onnx/op Reshape: {e} (a graph exported with fixed shapes runs at those shapes "
            "only; export it with dynamic axes for a free batch or length)"
        ) from None
    if isinstance(x, Host):
        return H.make(x.dtype, dims, x.values)
    return x.reshape(dims)


def unsqueeze(ctx, args, attrs, out):
    x = args[0]
    dims = list(_shape(x))
    axes = _axes(args, attrs) or []
    n = len(dims) + len(axes)
    for a in sorted(a % n for a in axes):
        dims.insert(a, 1)
    return H.make(x.dtype, dims, x.values) if isinstance(x, Host) else x.reshape(dims)


def squeeze(ctx, args, attrs, out):
    x = args[0]
    shp = _shape(x)
    axes = _axes(args, attrs)
    axes = {a % len(shp) for a in axes} if axes is not None else None
    dims = [d for i, d in enumerate(shp) if not (d == 1 and (axes is None or i in axes))]
    return H.make(x.dtype, dims, x.values) if isinstance(x, Host) else x.reshape(dims)


def flatten(ctx, args, attrs, out):
    x = args[0]
    shp = _shape(x)
    a = attrs.get("axis", 1) % (len(shp) + 1) if shp else 0
    dims = (math.prod(shp[:a]), math.prod(shp[a:]))
    return H.make(x.dtype, dims, x.values) if isinstance(x, Host) else x.reshape(dims)


def concat(ctx, args, attrs, out):
    parts = [a for a in args if a is not None]
    if _all_host(parts):
        return H.concat(parts, attrs.get("axis", 0))
    ts = [as_tensor(ctx, p) for p in parts]
    return ts[0].cat(ts[1:], attrs.get("axis", 0))


def split(ctx, args, attrs, out):
    x = args[0]
    shp = _shape(x)
    axis = attrs.get("axis", 0) % len(shp)
    if len(args) > 1 and args[1] is not None:
        sizes = _ints(args[1])
    elif attrs.get("split"):
        sizes = list(attrs["split"])
    else:
        n = attrs.get("num_outputs") or attrs.get("outputs_count")
        step = -(-shp[axis] // n)
        sizes = [min(step, shp[axis] - i * step) for i in range(n)]
    start = sum(sizes[:out])
    bounds = [(0, d, 1) for d in shp]
    bounds[axis] = (start, start + sizes[out], 1)
    return _cut(x, bounds)


def _cut(x, bounds):
    if isinstance(x, Host):
        return H.slice_(x, bounds)
    return x.slice([b[0] for b in bounds], [b[1] for b in bounds], [b[2] for b in bounds])


def slice_(ctx, args, attrs, out):
    x = args[0]
    get = [_ints(a) if a is not None else None for a in (list(args[1:]) + [None] * 4)[:4]]
    if get[0] is None:  # opset < 10: bounds are attributes
        get = [attrs.get("starts"), attrs.get("ends"), attrs.get("axes"), None]
    return _cut(x, H.slice_bounds(_shape(x), *get))


def gather(ctx, args, attrs, out):
    x, idx = args
    axis = attrs.get("axis", 0)
    if _all_host(args):
        return H.gather(x, axis, idx)
    x = as_tensor(ctx, x)
    axis %= x.ndim
    if isinstance(idx, Host):
        n = x.shape[axis]
        vals = [i + n if i < 0 else i for i in idx.ints()]
        if not idx.shape:  # one index: the axis goes away
            bounds = [(0, d, 1) for d in x.shape]
            bounds[axis] = (vals[0], vals[0] + 1, 1)
            return _cut(x, bounds).squeeze(axis)
        idx = H.make("i64", idx.shape, vals)
    return C.take(x, as_tensor(ctx, idx), axis)


def expand(ctx, args, attrs, out):
    x, target = args[0], _ints(args[1])
    dims = H.broadcast_shape(_shape(x), target)
    if isinstance(x, Host):
        return H.make(x.dtype, dims, H.expand_to(x, dims))
    lead = (1,) * (len(dims) - x.ndim) + tuple(x.shape)
    return x.reshape(lead).expand(dims)


def trilu(ctx, args, attrs, out):
    x = args[0]
    k = int(args[1].scalar()) if len(args) > 1 and args[1] is not None else 0
    upper = bool(attrs.get("upper", 1))
    if isinstance(x, Host):
        return H.trilu(x, k, upper)
    rows, cols = x.shape[-2:]
    i = arange(rows, device=ctx["device"]).unsqueeze(-1)
    j = arange(cols, device=ctx["device"]).unsqueeze(0)
    keep = (j - i).ge(k) if upper else (j - i).le(k)
    zero = False if x.dtype.name == "bool" else 0.0
    return x.where(keep, zero)


def _host_only(name, f):
    def run(ctx, args, attrs, out):
        if not _all_host(args):
            raise ScellisError(f"{name} of model tensors has no tensor form here")
        return f(args, attrs)

    return run


def _range(args, attrs):
    s, lim, d = (a.scalar() for a in args)
    return H.arange(s, lim, d, args[0].dtype)


def _gather_nd(args, attrs):
    if attrs.get("batch_dims", 0):
        raise ScellisError("GatherND with batch_dims is not supported")
    return H.gather_nd(args[0], args[1])


def _constant_of_shape(args, attrs):
    fill = attrs.get("value")
    fill = fill if fill is not None else H.make("f32", (1,), [0.0])
    shape = H.check_size(args[0].ints())
    return H.make(fill.dtype, shape, [fill.values[0]] * math.prod(shape))


def size(ctx, args, attrs, out):
    return H.make("i64", (), [math.prod(_shape(args[0]))])


OPS = {
    **{op: binary(op) for op in H.BINARY},
    **{op: unary(op) for op in _TENSOR_UNARY},
    "Dropout": dropout, "Gelu": gelu, "Cast": cast, "Where": where,
    "MatMul": matmul, "Gemm": gemm, "Softmax": softmax, "LogSoftmax": log_softmax,
    "LayerNormalization": layer_norm, "ReduceMean": _reduce("mean"),
    "ReduceSum": _reduce("sum"), "ReduceMax": _reduce("max"),
    "Shape": shape, "Transpose": transpose, "Reshape": reshape, "Unsqueeze": unsqueeze,
    "Squeeze": squeeze, "Flatten": flatten, "Concat": concat, "Split": split, "Slice": slice_,
    "Gather": gather, "Expand": expand, "Trilu": trilu,
    "Range": _host_only("Range", _range),
    "ConstantOfShape": _host_only("ConstantOfShape", _constant_of_shape),
    "Size": size,
    "GatherND": _host_only("GatherND", _gather_nd),
}  # fmt: skip
