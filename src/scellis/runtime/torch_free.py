"""torch's free functions that are more than a tensor method (runtime layer).

``matmul``, ``outer``, ``addmm``, ``cdist``, ``allclose``, ``bucketize``, ``unique``,
``repeat_interleave``, the stacks (``hstack``, ``vstack``...), ``diff``, ``meshgrid``
and the like, written over tensor methods so autograd and every device follow them.
Results whose shape depends on the values (``unique``, a tensor ``repeats``) read those
values back first, as torch synchronises there too.
"""

from __future__ import annotations

from builtins import sorted as builtins_sorted

from ..base.errors import ScellisError, ShapeError
from ..ops.composites import stack
from . import creation as C
from .tensor import Tensor
from .tensor_math import pair


def _t(x, like: Tensor | None = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return C.tensor(x, device=like.device if like is not None else None)


def matmul(input, other):  # noqa: A002 (torch's keyword)
    return input @ other


def mm(input, mat2):  # noqa: A002
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"mm takes two matrices, got {input.shape} and {mat2.shape}")
    return input @ mat2


def mv(input, vec):  # noqa: A002
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(f"mv takes a matrix and a vector, got {input.shape} and {vec.shape}")
    return input @ vec


def dot(input, other):  # noqa: A002
    if input.ndim != 1 or other.ndim != 1:
        raise ShapeError(f"dot takes two vectors, got {input.shape} and {other.shape}")
    return (input * other).sum()


vdot = dot


def inner(input, other):  # noqa: A002
    """The sum over the last dims of each pair: shape ``input[:-1] + other[:-1]``."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    k = input.shape[-1]
    flat = input.reshape((-1, k)) @ other.reshape((-1, k)).mT
    return flat.reshape(input.shape[:-1] + other.shape[:-1])


def outer(input, vec2):  # noqa: A002
    return input.reshape((-1, 1)) * vec2.reshape((1, -1))


ger = outer


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``."""
    prod = mat1 @ mat2
    return _scaled(input, beta) + _scaled(prod, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(mat @ vec, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(batch1 @ batch2, alpha)


def _scaled(x, s):
    return x if s == 1 else x * s


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of ``x1`` [.., P, M] and ``x2`` [.., R, M]."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return diff.norm(p, dim=-1)


def dist(input, other, p=2.0):  # noqa: A002
    return (input - other).norm(p)


def isclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False):  # noqa: A002
    a, b = pair(input, other)
    a, b = (a.cast("f32"), b.cast("f32")) if not a.dtype.is_float else (a, b)
    near = (a - b).abs() <= (b.abs() * rtol + atol)
    near = near.logical_or(a == b)  # equal infinities
    if equal_nan:
        near = near.logical_or(a.isnan().logical_and(b.isnan()))
    return near


def allclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:  # noqa: A002
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:  # noqa: A002
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all().item())


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """The bucket of each value among sorted ``boundaries``: how many lie below it
    (``right``: at or below it)."""
    x = _t(input, boundaries)
    b = boundaries.reshape((1,) * x.ndim + (-1,))
    below = (b <= x.unsqueeze(-1)) if right else (b < x.unsqueeze(-1))
    return below.cast("i32").sum(-1)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None):
    """Where ``values`` go in ``sorted_sequence`` (its last dim) to keep it sorted."""
    right = right or side == "right"
    v = _t(values, sorted_sequence)
    if sorted_sequence.ndim == 1:
        return bucketize(v, sorted_sequence, right=right)
    s = sorted_sequence.unsqueeze(-2)  # [..., 1, n] against [..., k, 1]
    below = (s <= v.unsqueeze(-1)) if right else (s < v.unsqueeze(-1))
    return below.cast("i32").sum(-1)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values, ascending (read back: their count is the result's shape)."""
    if dim is not None:
        raise ScellisError("unique(dim=...) is not supported; unique over all elements only")
    flat = input.reshape((-1,)).tolist()
    values = builtins_sorted(set(flat))
    out = C.tensor(values, device=input.device, dtype=input.dtype) if values else input[:0]
    extra = []
    if return_inverse:
        where = {v: i for i, v in enumerate(values)}
        inv = C.tensor([where[v] for v in flat] or [], device=input.device, dtype="i32")
        extra.append(inv.reshape(input.shape))
    if return_counts:
        counts = {v: 0 for v in values}
        for v in flat:
            counts[v] += 1
        extra.append(C.tensor([counts[v] for v in values], device=input.device, dtype="i32"))
    return (out, *extra) if extra else out


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element (slice along ``dim``) repeated ``repeats`` times in place."""
    if repeats is None:  # torch.repeat_interleave(counts): the indices, repeated
        counts = input.tolist()
        return C.tensor([i for i, k in enumerate(counts) for _ in range(k)] or [],
                        device=input.device, dtype="i32")  # fmt: skip
    x = input.reshape((-1,)) if dim is None else input
    d = 0 if dim is None else dim % x.ndim
    n = x.shape[d]
    counts = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    counts = [int(counts)] * n if isinstance(counts, (int, float)) else list(counts)
    if len(counts) == 1 and n != 1:
        counts = counts * n
    if len(counts) != n:
        raise ShapeError(f"repeat_interleave: {len(counts)} repeats for {n} elements")
    idx = [i for i, k in enumerate(counts) for _ in range(k)]
    return x.index_select(d, C.tensor(idx or [], device=x.device, dtype="i32"))


def atleast_1d(x):
    return x.reshape((1,)) if x.ndim == 0 else x


def atleast_2d(x):
    return x.reshape((1, -1)) if x.ndim < 2 else x


def hstack(tensors):
    ts = [atleast_1d(t) for t in tensors]
    return ts[0].cat(ts[1:], axis=0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    ts = [atleast_2d(t) for t in tensors]
    return ts[0].cat(ts[1:], axis=0)


row_stack = vstack


def dstack(tensors):
    ts = [t.reshape((1, -1, 1)) if t.ndim < 2 else (t.unsqueeze(-1) if t.ndim == 2 else t)
          for t in tensors]  # fmt: skip
    return ts[0].cat(ts[1:], axis=2)


def column_stack(tensors):
    ts = [t.reshape((-1, 1)) if t.ndim < 2 else t for t in tensors]
    return ts[0].cat(ts[1:], axis=1)


def concat(tensors, dim=0):
    ts = list(tensors)
    return ts[0].cat(ts[1:], axis=dim)


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    """The n-th forward difference along ``dim``."""
    x = input
    d = dim % x.ndim
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = parts[0].cat(parts[1:], axis=d)
    lead = (slice(None),) * d
    for _ in range(n):
        x = x[lead + (slice(1, None),)] - x[lead + (slice(0, -1),)]
    return x


def meshgrid(*tensors, indexing="ij"):
    ts = (
        list(tensors[0])
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
        else list(tensors)
    )
    if indexing not in ("ij", "xy"):
        raise ScellisError(f"meshgrid: indexing is 'ij' or 'xy', not {indexing!r}")
    if indexing == "xy" and len(ts) >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    k = len(ts)
    out = [
        t.reshape([-1 if i == j else 1 for i in range(k)]).expand(shape) for j, t in enumerate(ts)
    ]
    if indexing == "xy" and len(ts) >= 2:  # the grids of the swapped pair, swapped back
        out[0], out[1] = out[1], out[0]
    return out


def broadcast_to(input, size):  # noqa: A002
    return input.expand(tuple(size))


def tile(input, dims):  # noqa: A002
    dims = tuple(dims)
    x = (
        input.reshape((1,) * (len(dims) - input.ndim) + input.shape)
        if len(dims) > input.ndim
        else input
    )
    dims = (1,) * (x.ndim - len(dims)) + dims
    return x.repeat(*dims)


def pow(input, exponent):  # noqa: A001, A002 (torch's names)
    """``input ** exponent``; a number for ``input`` raises it to each element."""
    if not isinstance(input, Tensor):
        return exponent.__rpow__(input)
    return input.pow(exponent)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    """Zeros: storage is always initialised here."""
    out = input.zeros_like(dtype)
    out = out.to(device) if device is not None else out
    return out.requires_grad_() if requires_grad else out


def std_mean(input, dim=None, *, correction=1, keepdim=False, unbiased=None):  # noqa: A002
    kw = dict(correction=correction, unbiased=unbiased)
    return input.std(dim, keepdim, **kw), input.mean(dim, keepdim)


def var_mean(input, dim=None, *, correction=1, keepdim=False, unbiased=None):  # noqa: A002
    kw = dict(correction=correction, unbiased=unbiased)
    return input.var(dim, keepdim, **kw), input.mean(dim, keepdim)


def cartesian_prod(*tensors):
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape((-1,)) for g in grids], 1) if len(grids) > 1 else tensors[0]


__all__ = [
    "matmul", "mm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "addmv", "baddbmm",
    "cdist", "dist", "isclose", "allclose", "equal", "bucketize", "searchsorted", "unique",
    "repeat_interleave", "atleast_1d", "atleast_2d", "hstack", "vstack", "row_stack",
    "dstack", "column_stack", "concat", "diff", "meshgrid", "broadcast_to", "tile", "pow",
    "empty_like", "std_mean", "var_mean", "cartesian_prod",
]  # fmt: skip
