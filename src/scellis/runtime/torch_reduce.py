"""torch's reductions and scans beyond the primitives (runtime layer): a mixin of ``Tensor``.

``prod`` and ``cumprod`` multiply in a tree (log2(n) rounds of elementwise products), so
their gradient is autograd's own, zeros included; ``norm`` covers torch's ``p`` (2,
``"fro"``, 1, inf, -inf, 0 and any other number); ``all``/``any``/``count_nonzero``
count. ``dim`` may be an int, a tuple, negative, or None (every dim), as in torch.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from ..base.shapes import norm_axis


def _last(x, dim: int):
    """``x`` with ``dim`` moved last, and the permutation that puts it back."""
    n = x.ndim
    d = norm_axis(dim, n)
    perm = [i for i in range(n) if i != d] + [d]
    back = [perm.index(i) for i in range(n)]
    return x.permute(perm), back


def _tree_product(x):
    """The product over the last dim of ``x``, in log2(n) rounds of pairwise products."""
    n = x.shape[-1]
    if n == 0:
        return x.sum(-1) + 1
    while n > 1:
        if n % 2:
            x = x.cat([x[..., :1].ones_like()], axis=x.ndim - 1)
            n += 1
        x = x[..., 0::2] * x[..., 1::2]
        n //= 2
    return x.squeeze(-1)


def _scan_product(x):
    """The running product over the last dim (Hillis-Steele: log2(n) shifted products)."""
    n, s = x.shape[-1], 1
    while s < n:
        ones = x[..., :s].ones_like()
        x = x * ones.cat([x[..., : n - s]], axis=x.ndim - 1)
        s *= 2
    return x


def _root(total, power):
    """``total ** power`` with torch's zero gradient where ``total`` is 0 (the root's
    slope is infinite there; the sum's own slope is 0, so the chain would give NaN)."""
    pos = total > 0.0
    return total.where(pos, 1.0).pow(power).where(pos, 0.0)


def _bool_as_int(x):
    return x.cast("i32") if x.dtype.kind == "b" else x


class TorchReduceMethods:
    """torch's prod, cumprod, norm and logical reductions; no state of its own."""

    __slots__ = ()

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """torch's ``Tensor.unique``: ``torch.unique(self, ...)``."""
        from .torch_free import unique  # torch_free sits above the tensor class

        return unique(self, sorted, return_inverse, return_counts, dim)

    def prod(self, dim=None, keepdim=False, *, dtype=None):
        x = _bool_as_int(self.cast(dtype) if dtype is not None else self)
        if dim is None:
            return _tree_product(x.reshape((-1,)))
        y, back = _last(x, dim)
        out = _tree_product(y)
        return out.unsqueeze(norm_axis(dim, self.ndim)) if keepdim else out

    def cumprod(self, dim, *, dtype=None):
        x = _bool_as_int(self.cast(dtype) if dtype is not None else self)
        if x.ndim == 0:
            return x
        y, back = _last(x, dim)
        return _scan_product(y).permute(back)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """torch's vector norm over ``dim`` (every element when None)."""
        x = self.cast(dtype) if dtype is not None else self
        if not x.dtype.is_float:
            raise ScellisError("norm: a float tensor is needed (cast with .float())")
        if p in ("fro", 2, 2.0):
            return _root(x.square().sum(dim, keepdim), 0.5)
        if p == "nuc":
            raise ScellisError("norm(p='nuc') is not supported (it needs an SVD)")
        a = x.abs()
        if p == float("inf"):
            return a.amax(dim, keepdim)
        if p == float("-inf"):
            return a.amin(dim, keepdim)
        if p == 0:
            return (a != 0.0).cast(x.dtype).sum(dim, keepdim)
        if p == 1:
            return a.sum(dim, keepdim)
        return _root(a.pow(float(p)).sum(dim, keepdim), 1.0 / float(p))

    def all(self, dim=None, keepdim=False):
        """Whether every element (along ``dim``) is non-zero; bool."""
        zero = (self == 0) if self.dtype.kind != "b" else self.logical_not()
        return zero.cast("i32").sum(dim, keepdim) == 0

    def any(self, dim=None, keepdim=False):
        """Whether some element (along ``dim``) is non-zero; bool."""
        hit = (self != 0) if self.dtype.kind != "b" else self
        return hit.cast("i32").sum(dim, keepdim) > 0

    def count_nonzero(self, dim=None):
        hit = (self != 0) if self.dtype.kind != "b" else self
        return hit.cast("i32").sum(dim)

    def nansum(self, dim=None, keepdim=False):
        return self.where(self == self, 0.0).sum(dim, keepdim)

    def nanmean(self, dim=None, keepdim=False):
        ok = self == self
        return self.where(ok, 0.0).sum(dim, keepdim) / ok.cast(self.dtype).sum(dim, keepdim)

    def aminmax(self, *, dim=None, keepdim=False):
        return _MinMax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def median(self, dim=None, keepdim=False):
        """The lower median (torch's): over every element, a value; over ``dim``, the
        ``(values, indices)`` pair."""
        if dim is None:
            flat = self.reshape((-1,))
            return flat.kthvalue((flat.shape[0] + 1) // 2, 0).values
        return self.kthvalue((self.shape[dim] + 1) // 2, dim, keepdim)

    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """torch's quantile: ``q`` a number or a 1-d tensor or list in [0, 1] (its axis
        first in the result), over every element or along ``dim``."""
        x, d = (self.reshape((-1,)), 0) if dim is None else (self, norm_axis(dim, self.ndim))
        qs = q.tolist() if hasattr(q, "tolist") else q
        many = isinstance(qs, (list, tuple))
        ranked = x.sort(d).values
        picked = [_ranked_at(ranked, d, float(p), interpolation) for p in (qs if many else [qs])]
        if keepdim:
            picked = [p.unsqueeze(d) for p in picked]
            if dim is None:
                picked = [p.reshape((1,) * self.ndim) for p in picked]
        if not many:
            return picked[0]
        return picked[0].unsqueeze(0).cat([p.unsqueeze(0) for p in picked[1:]], 0)


_INTERPOLATIONS = ("linear", "lower", "higher", "nearest", "midpoint")


def _ranked_at(ranked, d: int, q: float, how: str):
    """The value at fraction ``q`` of the sorted ``ranked`` along ``d``."""
    if not 0.0 <= q <= 1.0 or how not in _INTERPOLATIONS:
        raise ScellisError(f"quantile: q {q} must be in [0, 1], interpolation one of "
                           f"{', '.join(_INTERPOLATIONS)}")  # fmt: skip
    pos = q * (ranked.shape[d] - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if how == "nearest":  # torch rounds half to even here
        lo = hi = round(pos)
    low, high = ranked.select(d, lo), ranked.select(d, hi)
    if how == "lower" or lo == hi:
        return low
    if how == "higher":
        return high
    frac = 0.5 if how == "midpoint" else pos - lo
    return low + (high - low) * frac


class _MinMax(tuple):
    """torch's ``aminmax`` pair: ``min`` and ``max`` by name or unpacked."""

    def __new__(cls, lo, hi):
        return super().__new__(cls, (lo, hi))

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]
