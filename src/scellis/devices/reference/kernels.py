"""Reference kernels (devices layer): one small NumPy function per primitive.

Floats compute in their own dtype, except f16, which computes in f32 and rounds once
(what the WebGPU path does with f32 accumulation).
"""

from __future__ import annotations

import math

import numpy as np

from ...base.errors import ShapeError
from .special import erf as _erf
from .special import erfc as _erfc


def _f(fn):
    """Wrap a float unary so f16 computes in f32."""

    def run(xs, attrs, out):
        x = xs[0]
        if x.dtype == np.float16:
            return fn(x.astype(np.float32)).astype(np.float16)
        return fn(x)

    return run


def _gelu_tanh(x):
    # 0.5 (1 + tanh z) = 1 / (1 + exp(-2z)): the same value without the left-tail cancellation
    c = x.dtype.type(math.sqrt(2.0 / math.pi))
    z = c * (x + x.dtype.type(0.044715) * x * x * x)
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(-2.0 * z))


def _gelu_erf(x):
    # erfc(-v) = 1 + erf(v) without the cancellation of the left tail
    return 0.5 * x * _erfc(-x / x.dtype.type(math.sqrt(2.0))).astype(x.dtype)


def _gelu_erf_grad(x, g):
    cdf = 0.5 * _erfc(-x / x.dtype.type(math.sqrt(2.0))).astype(x.dtype)
    pdf = np.exp(-0.5 * x * x) * x.dtype.type(1.0 / math.sqrt(2.0 * math.pi))
    return g * (cdf + x * pdf)


def _gelu_tanh_grad(x, g):
    c = x.dtype.type(math.sqrt(2.0 / math.pi))
    t = np.tanh(c * (x + x.dtype.type(0.044715) * x * x * x))
    dz = c * (1.0 + x.dtype.type(3 * 0.044715) * x * x)
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dz)


def _silu_grad(x, g):
    s = _sigmoid(x)
    return g * (s * (1.0 + x * (1.0 - s)))


def _softplus(x):
    # torch's threshold: linear above 20 (beta = 1)
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def _sigmoid(x):
    # exp(-x) overflows to inf for very negative x, and 1 / inf is the exact 0
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _log(x):
    # log(0) = -inf is the answer (pow's gradient takes log of a zero base, then masks it)
    with np.errstate(divide="ignore"):
        return np.log(x)


def _mul(a, b):
    # 0 * inf = nan is the answer (pow's gradient: 0 * log(0), masked afterwards)
    with np.errstate(invalid="ignore"):
        return np.multiply(a, b)


def _pow(a, b):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.power(a, b)


UNARY = {
    "exp": np.exp,
    "log": _log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "gelu_tanh": _gelu_tanh,
    "gelu_erf": _gelu_erf,
    "silu": lambda x: x * _sigmoid(x),
    "softplus": _softplus,
    "erf": lambda x: _erf(x).astype(x.dtype),
    "sin": np.sin,
    "cos": np.cos,
}
SIMPLE_UNARY = {
    "neg": np.negative,
    "abs": np.abs,
    "relu": lambda x: np.maximum(x, 0),
    "sign": np.sign,
    "logical_not": np.logical_not,
    "copy": lambda x: x.copy(),
}
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": _mul,
    "pow": _pow,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "gelu_erf_grad": _gelu_erf_grad,
    "gelu_tanh_grad": _gelu_tanh_grad,
    "silu_grad": _silu_grad,
    "relu_grad": lambda x, g: np.where(x > 0, g, g.dtype.type(0.0)),
}


def _div(xs, attrs, out):
    a, b = xs
    if a.dtype.kind in "iu":
        return np.floor_divide(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


def _clamp(xs, attrs, out):
    x = xs[0]
    lo, hi = attrs.get("lo"), attrs.get("hi")
    if lo is not None:
        x = np.maximum(x, x.dtype.type(lo))
    if hi is not None:
        x = np.minimum(x, x.dtype.type(hi))
    return x


def _reduce(ufunc):
    """A reduction as ``ufunc.reduce``: the values ``np.sum``/``np.max`` give, without
    their Python wrappers. f16 sums accumulate in f32."""

    def run(xs, attrs, out):
        x = xs[0]
        axes = tuple(attrs["axes"])
        if ufunc is not np.add and _short_rows(x, axes):
            return _row_extremum(ufunc, x, attrs["keepdim"])
        acc = np.float32 if ufunc is np.add and x.dtype == np.float16 else None
        return ufunc.reduce(x, axis=axes, dtype=acc, keepdims=attrs["keepdim"])

    return run


# A max or min over a short last axis (a softmax's rows over a few keys) is several
# times slower along that axis than over the first axis of its transposed copy: NumPy
# runs one short inner loop per row. The extremum is the same value whichever order
# the elements meet in, so the copy changes no result; sums keep NumPy's own order.
_SHORT_ROW = 32


def _short_rows(x, axes) -> bool:
    return axes == (x.ndim - 1,) and x.ndim > 1 and 1 < x.shape[-1] <= _SHORT_ROW and x.size > 0


def _row_extremum(ufunc, x, keepdim: bool):
    cols = np.ascontiguousarray(x.reshape(-1, x.shape[-1]).T)
    r = np.empty(x.shape[:-1] + ((1,) if keepdim else ()), x.dtype)
    ufunc.reduce(cols, axis=0, out=r.reshape(-1))  # into r: a result of its own memory
    return r


def _argmax(xs, attrs, out):
    x = xs[0]
    axes = tuple(attrs["axes"])
    if len(axes) != 1:
        raise ValueError("argmax takes one axis")
    return np.argmax(x, axis=axes[0], keepdims=attrs["keepdim"]).astype(np.int32)


def _matmul(xs, attrs, out):
    a, b = xs
    if a.dtype == np.float16:
        return np.matmul(a.astype(np.float32), b.astype(np.float32))
    return np.matmul(a, b)


def _pad(xs, attrs, out):
    x = xs[0]
    lo, hi, interior = attrs["lo"], attrs["hi"], attrs["interior"]
    shape = [a + b + d + max(d - 1, 0) * i for d, a, b, i in zip(x.shape, lo, hi, interior)]
    y = np.full(shape, attrs.get("value", 0), dtype=x.dtype)
    idx = tuple(
        slice(a, a + max(d - 1, 0) * (i + 1) + 1 if d else a, i + 1)
        for d, a, i in zip(x.shape, lo, interior)
    )
    y[idx] = x
    return y


def _concat(xs, attrs, out):
    return np.concatenate(xs, axis=attrs["axis"])


def _check_index(idx, size: int, what: str) -> None:
    """A user's out-of-range index is a ShapeError naming the first bad entry."""
    if not idx.size or (np.minimum.reduce(idx, None) >= 0 and np.maximum.reduce(idx, None) < size):
        return
    bad = (idx < 0) | (idx >= size)
    k = int(np.flatnonzero(bad.reshape(-1))[0])
    raise ShapeError(
        f"{what} index {int(idx.reshape(-1)[k])} is out of range for a dim of size {size}"
    )


def _index_line(idx, axis: int):
    """The 1-D indices along ``axis`` when ``idx`` repeats them along every other axis
    (an embedding's rows: the index broadcast over the features), else None."""
    if idx.ndim < 1 or any(s for i, s in enumerate(idx.strides) if i != axis):
        return None
    return idx[tuple(slice(None) if i == axis else 0 for i in range(idx.ndim))]


def _gather(xs, attrs, out):
    x, idx = xs
    axis = attrs["axis"]
    _check_index(idx, x.shape[axis], "gather")
    # gather only indexes the leading region of x on off-axis dims
    region = tuple(slice(0, n) if i != axis else slice(None) for i, n in enumerate(idx.shape))
    line = _index_line(idx, axis)
    if line is not None:  # whole rows taken: the same elements, one ``take``
        return np.take(x[region], line, axis=axis)
    return np.take_along_axis(x[region], idx.astype(np.int64), axis=axis)


def _scatter_add(xs, attrs, out):
    src, idx = xs
    axis, shape = attrs["axis"], tuple(attrs["shape"])
    _check_index(idx, shape[axis], "scatter_add")
    y = np.zeros(shape, dtype=src.dtype)
    # flat positions in y of src's elements, in src's C order: ``np.add.at`` adds them in
    # that order, as it does over a tuple of index grids, at a fraction of the cost
    strides = [s // y.itemsize for s in y.strides] if y.size else [0] * y.ndim
    flat = idx.astype(np.intp) * strides[axis]
    for d, n in enumerate(idx.shape):
        if d != axis and n > 1 and strides[d]:
            step = np.arange(n, dtype=np.intp) * strides[d]
            flat = flat + step.reshape((n,) + (1,) * (idx.ndim - d - 1))
    np.add.at(y.reshape(-1), flat.reshape(-1), src.reshape(-1))  # src has idx's shape
    return y


def _full(xs, attrs, out):
    return np.full(attrs["shape"], attrs["value"], dtype=out[0])


def _arange(xs, attrs, out):
    return np.arange(attrs["n"], dtype=out[0])


M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox_np(n: int, key, draw: int, step: int) -> np.ndarray:
    """Vectorised Philox4x32-10 over blocks 0..ceil(n/4)-1; equals base.rng.raw_u32."""
    nb = (n + 3) // 4
    mask = np.uint64(0xFFFFFFFF)
    c0 = np.arange(nb, dtype=np.uint64)
    c1 = np.full(nb, draw & 0xFFFFFFFF, dtype=np.uint64)
    c2 = np.full(nb, step & 0xFFFFFFFF, dtype=np.uint64)
    c3 = np.full(nb, (step >> 32) & 0xFFFFFFFF, dtype=np.uint64)
    k0, k1 = int(key[0]), int(key[1])
    for r in range(10):
        if r:
            k0 = (k0 + W0) & 0xFFFFFFFF
            k1 = (k1 + W1) & 0xFFFFFFFF
        p0 = np.uint64(M0) * c0
        p1 = np.uint64(M1) * c2
        c0, c1, c2, c3 = (
            (p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
            p1 & mask,
            (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
            p0 & mask,
        )
    return np.stack([c0, c1, c2, c3], axis=1).reshape(-1)[:n].astype(np.uint32)


def _rand_uniform(xs, attrs, out):
    n = int(np.prod(attrs["shape"], dtype=np.int64))
    u = philox_np(n, attrs["key"], attrs["draw"], attrs["step"])
    return ((u >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)).reshape(attrs["shape"])


def _bernoulli(xs, attrs, out):
    n = int(np.prod(attrs["shape"], dtype=np.int64))
    u = philox_np(n, attrs["key"], attrs["draw"], attrs["step"])
    t = np.uint32(int(attrs["keep"] * 16777216.0))
    return ((u >> np.uint32(8)) < t).reshape(attrs["shape"])


def _masked_scale(xs, attrs, out):
    """x * mask * scale in the unfused dropout's order of products (see the op), each
    product rounded in x's dtype, as the two elementwise multiplies it replaces round."""
    x, mask = xs
    m, s = mask.astype(x.dtype), x.dtype.type(attrs["scale"])
    if x.dtype == np.float16:  # f16 computes in f32 and rounds once a product
        mul = lambda a, b: (a.astype(np.float32) * np.asarray(b, np.float32)).astype(np.float16)  # noqa: E731
    else:
        mul = np.multiply
    return mul(mul(x, s), m) if attrs.get("grad_order") else mul(mul(x, m), s)


def _where(xs, attrs, out):
    return np.where(*xs)


def _cast(xs, attrs, out):
    return xs[0].astype(out[0])


KERNELS = {
    **{k: _f(v) for k, v in UNARY.items()},
    **{k: (lambda fn: lambda xs, a, o: fn(xs[0]))(v) for k, v in SIMPLE_UNARY.items()},
    **{k: (lambda fn: lambda xs, a, o: fn(xs[0], xs[1]))(v) for k, v in BINARY.items()},
    "div": _div,
    "clamp": _clamp,
    "where": _where,
    "masked_scale": _masked_scale,
    "cast": _cast,
    "sum": _reduce(np.add),
    "max": _reduce(np.maximum),
    "min": _reduce(np.minimum),
    "argmax": _argmax,
    "matmul": _matmul,
    "pad": _pad,
    "concat": _concat,
    "gather": _gather,
    "scatter_add": _scatter_add,
    "full": _full,
    "arange": _arange,
    "rand_uniform": _rand_uniform,
    "bernoulli": _bernoulli,
}


# -- optimizer updates (ops/optim.py): in place, so the backend passes the targets' current
# values after the inputs (``reads_targets``); the op order follows torch's single-tensor
# loops, with the host-side scalars of ``ops.optim.scalars`` --
from ...ops.fused_step import CLIP_EPS, FACTOR, FINITE  # noqa: E402
from ...ops.optim import grad_count, reads_stats, scalars  # noqa: E402  (ops sit below devices)


def _inplace(fn):
    fn.reads_targets = True
    return fn


def _optim(op):
    def run(xs, attrs, out):
        n = grad_count(attrs)
        if n > 1:  # the multi-tensor form: its gradients laid end to end
            xs = [np.concatenate([g.reshape(-1) for g in xs[:n]]), *xs[n:]]
        if len(xs) > 1 and xs[1].ndim == 0 and xs[1].dtype == np.bool_:  # gated
            if not xs[1]:
                return [x.copy() for x in xs[2:]]  # a skipped step writes nothing
            xs = [xs[0], *xs[2:]]
        elif reads_stats(attrs):  # grad_stats' result: the finite flag and the clip factor
            st = xs[1]
            if not st[FINITE]:
                return [x.copy() for x in xs[2:]]
            xs = [xs[0] * st[FACTOR], *xs[2:]]
        k = {n: xs[0].dtype.type(v) for n, v in scalars(op, attrs).items()}
        return _OPTIM_BODIES[op](xs, attrs, k)

    return _inplace(run)


def _sgd_body(xs, attrs, k):
    g, p, *state = xs
    g = g * k["gsign"] + k["wd"] * p
    if not state:
        return [p + k["neg_lr"] * g]
    buf = g.copy() if attrs["first"] else state[0] * k["mom"] + k["damp1"] * g
    step = g + k["mom"] * buf if attrs["nesterov"] else buf
    return [p + k["neg_lr"] * step, buf]


def _adam_body(xs, attrs, k):
    g, p, m, v, *vmax = xs
    g = g * k["gsign"] + k["wd"] * p
    p = p * k["decay"]
    m = m + k["w1"] * (g - m)
    v = v * k["b2"] + k["w2"] * (g * g)
    out_state = [m, v]
    if attrs["amsgrad"]:
        vmax = np.maximum(vmax[0], v)
        out_state.append(vmax)
        v = vmax
    denom = np.sqrt(v) / k["bc2_sqrt"] + k["eps"]
    return [p + k["neg_step_size"] * (m / denom), *out_state]


def _rmsprop_body(xs, attrs, k):
    g, p, sq, *rest = xs
    buf = rest.pop(0) if attrs["momentum"] > 0 else None
    ga = rest.pop(0) if attrs["centered"] else None
    g = g * k["gsign"] + k["wd"] * p
    sq = sq * k["alpha"] + k["w"] * (g * g)
    state = [sq]
    if ga is not None:
        ga = ga + k["w"] * (g - ga)
        avg = np.sqrt(sq - ga * ga) + k["eps"]
    else:
        avg = np.sqrt(sq) + k["eps"]
    if buf is not None:
        buf = buf * k["mom"] + g / avg
        state.append(buf)
        p = p + k["neg_lr"] * buf
    else:
        p = p + k["neg_lr"] * (g / avg)
    return [p, *state, *([ga] if ga is not None else [])]


def _lion_body(xs, attrs, k):
    g, p, m = xs
    g = g * k["gsign"]
    c = m * k["b1"] + k["w1"] * g
    p = p * k["decay"] + k["neg_lr"] * np.sign(c)
    return [p, m * k["b2"] + k["w2"] * g]


def _adagrad_body(xs, attrs, k):
    g, p, total = xs
    g = g * k["gsign"] + k["wd"] * p
    total = (np.full_like(total, k["init"]) if attrs["step"] == 1 else total) + g * g
    return [p + k["neg_clr"] * (g / (np.sqrt(total) + k["eps"])), total]


def _nadam_body(xs, attrs, k):
    g, p, m, v = xs
    g = g * k["gsign"] + k["wd"] * p
    p = p * k["decay"]
    m = m + k["w1"] * (g - m)
    v = v * k["b2"] + k["w2"] * (g * g)
    denom = np.sqrt(v / k["bc2"]) + k["eps"]
    p = p + k["c_grad"] * (g / denom)
    return [p + k["c_avg"] * (m / denom), m, v]


def _radam_body(xs, attrs, k):
    g, p, m, v = xs
    g = g * k["gsign"] + k["wd"] * p
    p = p * k["decay"]
    m = m + k["w1"] * (g - m)
    v = v * k["b2"] + k["w2"] * (g * g)
    adapt = k["bc2_sqrt"] / (np.sqrt(v) + k["eps"]) if k["rectify"] else 1.0
    return [p + k["neg_step"] * (m * adapt), m, v]


def _flat_gather(xs, attrs, out):
    return np.concatenate([x.reshape(-1) for x in xs]) if xs else np.zeros(0, out[0])


_OPTIM_BODIES = {
    "sgd_update": _sgd_body,
    "adam_update": _adam_body,
    "adamw_update": _adam_body,
    "rmsprop_update": _rmsprop_body,
    "lion_update": _lion_body,
    "adagrad_update": _adagrad_body,
    "nadam_update": _nadam_body,
    "radam_update": _radam_body,
}
KERNELS.update({op: _optim(op) for op in _OPTIM_BODIES})
KERNELS["flat_gather"] = _flat_gather


def _grad_stats(xs, attrs, out):
    """ops.fused_step: the joint norm, the clip factor and the finite flag."""
    flat = np.concatenate([g.reshape(-1) for g in xs])
    norm = np.sqrt(np.sum(flat * flat))
    limit = float(attrs.get("max_norm", 0.0))
    factor = min(limit / (norm + CLIP_EPS), 1.0) if limit else 1.0
    return np.array([norm, factor, float(np.isfinite(flat).all())], dtype=out[0])


def _step_tally(xs, attrs, out):
    loss, st, total, good, skipped = xs
    ok = loss.dtype.type(st[FINITE])
    return [total + np.where(ok, loss, 0), good + ok, skipped + (1 - ok)]


KERNELS["grad_stats"] = _grad_stats


def _softmax_xent(xs, attrs, out):
    """ops/xent.py: the gradient basis, the row losses and valid flags, the mean, 1/count."""
    x, t = xs
    r, c = x.shape
    e = float(attrs.get("label_smoothing", 0.0))
    valid = t != int(attrs.get("ignore_index", -100))
    safe = np.where(valid, t, 0).astype(np.int64)
    top = x.max(axis=1, keepdims=True)
    lse = top + np.log(np.exp(x - top).sum(axis=1, keepdims=True))
    logp = x - lse
    rows = -(1 - e) * logp[np.arange(r), safe] - e * logp.mean(axis=1)
    rows = np.where(valid, rows, 0)
    target = (1 - e) * np.eye(c, dtype=x.dtype)[safe] + e / c
    basis = np.where(valid[:, None], np.exp(logp) - target, 0)
    count = valid.sum(dtype=x.dtype)
    tail = [rows.sum() / count, 1 / count]
    return np.concatenate([basis.reshape(-1), rows, valid.astype(x.dtype), tail]).astype(out[0])


KERNELS["softmax_xent"] = _softmax_xent
KERNELS["step_tally"] = _inplace(_step_tally)


# -- the fused dense layer (ops/dense.py) --
_DENSE_ACT = {
    "gelu": _gelu_erf,
    "gelu_tanh": _gelu_tanh,
    "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x * _sigmoid(x),
    "tanh": np.tanh,
}
# the derivative times g, from the pre-activation x and the activation y
_DENSE_ACT_GRAD = {
    "gelu": lambda x, y, g: _gelu_erf_grad(x, g),
    "gelu_tanh": lambda x, y, g: _gelu_tanh_grad(x, g),
    "relu": lambda x, y, g: np.where(x > 0, g, 0).astype(x.dtype),
    "silu": lambda x, y, g: _silu_grad(x, g),
    "tanh": lambda x, y, g: g * (1.0 - y * y),
}


def _dense_act(xs, attrs, out):
    x, w, b = xs
    pre = np.matmul(x, w.T) + b
    if attrs["act"] == "none":
        return pre[None]
    return np.stack([_DENSE_ACT[attrs["act"]](pre), pre])


def _dense_act_backward(xs, attrs, out):
    g, y = xs
    d = _DENSE_ACT_GRAD[attrs["act"]](y[1], y[0], g[0])
    return np.concatenate([d.reshape(-1), d.sum(0)])


KERNELS["dense_act"] = _dense_act
KERNELS["dense_act_backward"] = _dense_act_backward
