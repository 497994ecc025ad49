"""More of torch's free functions (runtime layer): contractions, index grids, counts,
running extremes and random draws with torch's signatures, over tensor methods."""

from __future__ import annotations

import math

from ..base.errors import ScellisError, ShapeError
from . import creation as C
from .factories import linspace
from .tensor import Tensor
from .torch_ops import ValuesIndices


def tensordot(a, b, dims=2):
    """The sum over ``dims`` (a count of a's last and b's first dims, or two lists)."""
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [d % a.ndim for d in dims[0]], [d % b.ndim for d in dims[1]]
    if [a.shape[i] for i in da] != [b.shape[i] for i in db]:
        raise ShapeError(f"tensordot: dims {da} of {a.shape} and {db} of {b.shape} differ")
    keep_a = [i for i in range(a.ndim) if i not in da]
    keep_b = [i for i in range(b.ndim) if i not in db]
    k = math.prod(a.shape[i] for i in da)
    left = a.permute(keep_a + da).reshape((-1, k))
    right = b.permute(db + keep_b).reshape((k, -1))
    return (left @ right).reshape(
        tuple(a.shape[i] for i in keep_a) + tuple(b.shape[i] for i in keep_b)
    )


def kron(input, other):  # noqa: A002 (torch's keyword)
    """The Kronecker product of two tensors of one rank."""
    if input.ndim != other.ndim:
        raise ShapeError(f"kron here takes tensors of one rank, got {input.ndim} and {other.ndim}")
    a = input.reshape(tuple(d for s in input.shape for d in (s, 1)))
    b = other.reshape(tuple(d for s in other.shape for d in (1, s)))
    return (a * b).reshape(tuple(x * y for x, y in zip(input.shape, other.shape)))


def block_diag(*tensors):
    """The matrices along the diagonal of one matrix, zeros elsewhere."""
    mats = [t.reshape((1, -1)) if t.ndim < 2 else t for t in tensors]
    rows = sum(m.shape[0] for m in mats)
    cols = sum(m.shape[1] for m in mats)
    parts, at_r, at_c = [], 0, 0
    for m in mats:
        r, c = m.shape
        parts.append(m.pad((at_r, at_c), (rows - at_r - r, cols - at_c - c)))
        at_r, at_c = at_r + r, at_c + c
    out = parts[0]
    for p in parts[1:]:
        out = out + p
    return out


def _index_grid(row, col, offset, upper, device):
    if upper:
        pairs = [(r, c) for r in range(row) for c in range(col) if c - r >= offset]
    else:
        pairs = [(r, c) for r in range(row) for c in range(col) if c - r <= offset]
    rows = [r for r, _ in pairs]
    cols = [c for _, c in pairs]
    return C.tensor([rows, cols] if pairs else [[], []], device=device, dtype="i32").reshape(
        (2, len(pairs))
    )


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    return _index_grid(int(row), int(col), int(offset), True, device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    return _index_grid(int(row), int(col), int(offset), False, device)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    out = (linspace(start, end, steps, device=device) * math.log(base)).exp()
    out = out.cast(dtype) if dtype is not None else out
    return out.requires_grad_() if requires_grad else out


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value 0..max occurs (summing ``weights`` instead of ones)."""
    if input.ndim != 1:
        raise ShapeError(f"bincount takes a 1-d integer tensor, got shape {input.shape}")
    n = max(int(input.max().item()) + 1 if input.shape[0] else 0, int(minlength))
    hits = input.cast("i32").unsqueeze(1) == C.arange(n, "i32", input.device).unsqueeze(0)
    if weights is None:
        return hits.cast("i32").sum(0)
    return (hits.cast(weights.dtype) * weights.unsqueeze(1)).sum(0)


def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Counts of ``input`` in ``bins`` equal bins over [min, max] (the data's range when
    both are 0); values outside are left out, as torch's."""
    lo, hi = float(min), float(max)
    if lo == hi == 0:
        lo, hi = input.min().item(), input.max().item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    flat = input.reshape((-1,)).float()
    inside = (flat >= lo).logical_and(flat <= hi)
    k = ((flat - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).cast("i32")
    hits = k.unsqueeze(1) == C.arange(bins, "i32", input.device).unsqueeze(0)
    return (hits.logical_and(inside.unsqueeze(1))).cast("f32").sum(0)


def _running(x, dim, better):
    """(values, indices) of the running extreme along ``dim``, by log2(n) shifted steps."""
    d = dim % x.ndim
    n = x.shape[d]
    idx = C.arange(n, "i32", x.device).reshape([n if i == d else 1 for i in range(x.ndim)])
    vals, where, s = x, idx.expand(x.shape), 1
    while s < n:
        # each place against the one s before it (the first s places against themselves)
        pv, pi = _shifted(vals, d, s), _shifted(where, d, s)
        take = better(pv, vals)
        vals, where = pv.where(take, vals), pi.where(take, where)
        s *= 2
    return ValuesIndices(vals, where)


def _shifted(x, d, s):
    lead = (slice(None),) * d
    n = x.shape[d]
    return x[lead + (slice(0, s),)].cat([x[lead + (slice(0, n - s),)]], d)


def cummax(input, dim):  # noqa: A002
    return _running(input, dim, lambda prev, cur: prev > cur)


def cummin(input, dim):  # noqa: A002
    return _running(input, dim, lambda prev, cur: prev < cur)


def logcumsumexp(input, dim):  # noqa: A002
    """log(cumsum(exp(x))) along ``dim``, shifted by the max for range."""
    top = input.amax(dim, keepdim=True).detach()
    return (input - top).exp().cumsum(dim).log() + top


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Draws from N(mean, std): tensors broadcast, or numbers with ``size``."""
    shape = None
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = like.shape if not isinstance(std, Tensor) or like is std else None
        shape = shape or (mean * 0 + std * 0).shape
        device = like.device
    elif size is None:
        raise ScellisError("normal(mean, std) of numbers needs size=")
    z = C.randn(tuple(shape if shape is not None else size), device, dtype, generator)
    return z * std + mean


def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    probs = input if p is None else input.full_like(float(p))
    return (C.rand(input.shape, input.device, "f32", generator) < probs).cast(input.dtype)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is among ``test_elements`` (a tensor, list or number)."""
    if not isinstance(test_elements, Tensor):
        values = test_elements if isinstance(test_elements, (list, tuple)) else [test_elements]
        test_elements = C.tensor(list(values), device=elements.device, dtype=elements.dtype)
    found = (elements.unsqueeze(-1) == test_elements.reshape((1, -1))).any(-1)
    return found.logical_not() if invert else found


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """``input`` picked at ``indices`` along ``dim`` (both broadcast on the other dims);
    without ``dim``, from the flattened tensor."""
    if dim is None:
        return input.reshape((-1,)).gather(0, indices.reshape((-1,)))
    d = dim % input.ndim
    shape = [max(a, b) for a, b in zip(input.shape, indices.shape)]
    x = input.expand(tuple(n if i != d else input.shape[d] for i, n in enumerate(shape)))
    idx = indices.expand(tuple(n if i != d else indices.shape[d] for i, n in enumerate(shape)))
    return x.gather(d, idx)


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """Views of ``input`` split along ``dim``: into n near-equal parts (the first
    ``size % n`` one longer), or at the given indices."""
    d = dim % input.ndim
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k < 1:
            raise ScellisError(f"tensor_split: {k} sections (at least 1)")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        cuts = [sum(sizes[:i]) for i in range(1, k)]
    else:
        cuts = [min(max(int(c), 0), n) for c in indices_or_sections]
    bounds = [0, *cuts, n]
    return tuple(input.narrow(d, a, max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))


__all__ = [
    "tensordot", "kron", "block_diag", "triu_indices", "tril_indices", "logspace", "bincount",
    "histc", "cummax", "cummin", "logcumsumexp", "normal", "bernoulli", "isin",
    "take_along_dim", "tensor_split",
]  # fmt: skip
