"""Sorting, running sums and triangles (ops layer): composites over primitives.

There is no sort or scan primitive (and no WGSL kernel for one), so these are written
with comparisons, sums, matmul and gather, which every device has and whose VJPs
exist: a value picked by ``sort`` or ``topk`` gets its gradient through ``gather``,
a running sum through ``matmul``. Sorting compares every pair along the axis
(O(n^2) work and memory per row): right for the rows tutorials sort (a vocabulary's
logits, a batch's scores), wrong for a million elements.
"""

from __future__ import annotations

from ..base.errors import ShapeError


def _last(x, axis):
    """``x`` with ``axis`` moved last, and the permutation that undoes it."""
    axis = axis % x.ndim
    if axis == x.ndim - 1:
        return x, None
    perm = [d for d in range(x.ndim) if d != axis] + [axis]
    back = [0] * x.ndim
    for i, p in enumerate(perm):
        back[p] = i
    return x.permute(perm), back


def _restore(y, back):
    return y if back is None else y.permute(back)


def sort_order(x, axis=-1, descending=False):
    """The indices (i32) that sort ``x`` along ``axis``; equal values keep their order.

    Element i's place is the count of elements that go before it: smaller ones (larger
    when descending), and equal ones standing earlier. The index at place k is then
    the sum of i over the elements whose place is k.
    """
    if x.ndim == 0:
        return x.zeros_like("i32")
    xl, back = _last(x, axis)
    n = xl.shape[-1]
    a, b = xl.unsqueeze(-1), xl.unsqueeze(-2)  # a: element i, b: element j
    pos = xl.arange_like(n).cast("i32")
    earlier = pos.unsqueeze(-1) > pos.unsqueeze(-2)  # j stands before i
    ahead = (b > a) if descending else (b < a)
    before = ahead.logical_or((b == a).logical_and(earlier))
    place = before.cast("i32").sum(-1)  # [..., n]: where element i goes
    hits = place.unsqueeze(-1) == pos  # [..., i, k]
    order = (hits.cast("i32") * pos.unsqueeze(-1)).sum(-2)
    return _restore(order, back)


def sort(x, axis=-1, descending=False):
    """(values, indices) of ``x`` sorted along ``axis``."""
    if x.ndim == 0:
        return x, sort_order(x)
    order = sort_order(x, axis, descending)
    return x.gather(order, axis % x.ndim), order


def topk(x, k, axis=-1, largest=True, sorted_=True):
    """(values, indices) of the ``k`` largest (smallest) along ``axis``, in order."""
    axis = axis % max(x.ndim, 1)
    n = x.shape[axis] if x.ndim else 1
    if not 0 <= k <= n:
        raise ShapeError(f"topk: k={k} is out of range for a dim of size {n}")
    values, order = sort(x, axis, descending=largest)
    if x.ndim == 0:
        return values, order
    keep = tuple(slice(None) if d != axis else slice(0, k) for d in range(x.ndim))
    return values[keep], order[keep]


def kthvalue(x, k, axis=-1, keepdim=False):
    """(value, index) of the k-th smallest element (k counts from 1) along ``axis``."""
    axis = axis % x.ndim
    n = x.shape[axis]
    if not 1 <= k <= n:
        raise ShapeError(f"kthvalue: k={k} is out of range for a dim of size {n}")
    values, order = sort(x, axis)
    pick = tuple(slice(None) if d != axis else slice(k - 1, k) for d in range(x.ndim))
    v, i = values[pick], order[pick]
    return (v, i) if keepdim else (v.squeeze(axis), i.squeeze(axis))


def cumsum(x, axis):
    """The running sum along ``axis``: a matmul by an upper-triangular matrix of ones,
    so its gradient is the reversed running sum without a rule of its own. Integer and
    bool inputs are summed in f32 (exact below 2^24) and cast back to i32."""
    if x.ndim == 0:
        return x
    xl, back = _last(x, axis)
    n = xl.shape[-1]
    pos = xl.arange_like(n).cast("i32")
    work = xl if xl.dtype.is_float else xl.cast("f32")
    upper = (pos.unsqueeze(-1) <= pos.unsqueeze(0)).cast(work.dtype)  # [j, i]: j <= i
    out = work @ upper
    if not xl.dtype.is_float:
        out = out.cast("i32")
    return _restore(out, back)


def triangle(x, diagonal=0, upper=False):
    """``x`` with the elements off the lower (``upper``: upper) triangle of its last
    two dims zeroed, as torch's ``tril``/``triu``."""
    if x.ndim < 2:
        raise ShapeError(f"tril/triu need at least 2 dims, got shape {tuple(x.shape)}")
    rows, cols = x.shape[-2], x.shape[-1]
    r = x.arange_like(rows).cast("i32").unsqueeze(-1)
    c = x.arange_like(cols).cast("i32").unsqueeze(0)
    keep = (c - r >= diagonal) if upper else (c - r <= diagonal)
    return x.where(keep, x.zeros_like())


def repeat(x, sizes):
    """``x`` tiled ``sizes[d]`` times along each dim (torch's ``Tensor.repeat``)."""
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(f"repeat needs at least {x.ndim} sizes, got {len(sizes)}")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    inter, tiled, final = [], [], []
    for r, s in zip(sizes, shape):
        inter += [1, s]
        tiled += [r, s]
        final.append(r * s)
    return x.reshape(tuple(inter)).expand(tuple(tiled)).reshape(tuple(final))
