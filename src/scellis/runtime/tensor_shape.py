"""Tensor's shape methods (runtime layer): views, layout changes and indexing.

``TensorShape`` is a mixin of ``Tensor``. Views (permute, expand, reshape, slice...)
make new geometry over the same buffer and never reach a device; a reshape that no
strides can express copies first. Indexing lowers to a slice, a reshape and takes.
"""

from __future__ import annotations

from ..base.dtypes import i32
from ..base.errors import ShapeError
from ..base.shapes import contiguous_strides, infer_reshape, norm_axes, norm_axis, view_strides
from ..ops import composites as C
from ..ops.movement import slice_len
from .primitive import apply_op, apply_view


def _dims(args: tuple) -> tuple:
    """``f(2, 3)`` and ``f((2, 3))`` alike: the dims as one tuple."""
    return tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args


# (shape, strides, asked dims) -> (the new shape, strides that view it without a copy or
# None): a reshape's arithmetic, the same for every step of a training loop
_RESHAPED: dict = {}
_RESHAPED_MAX = 4096


def _reshaped(shape: tuple, strides: tuple, dims: tuple) -> tuple:
    key = (shape, strides, dims)
    try:
        hit = _RESHAPED.get(key)
    except TypeError:  # an unhashable dim: worked out, not kept
        key, hit = None, None
    if hit is None:
        new = infer_reshape(shape, dims)  # raises on a bad request: nothing is kept
        hit = (new, view_strides(shape, strides, new))
        if key is not None:
            if len(_RESHAPED) >= _RESHAPED_MAX:
                _RESHAPED.clear()
            _RESHAPED[key] = hit
    return hit


# ndim -> the permutation that swaps the last two axes (``mT``, every matmul's VJP)
_SWAP_LAST: dict[int, tuple] = {}


class TensorShape:
    """View, layout and indexing methods."""

    __slots__ = ()

    def contiguous(self):
        return self if self.is_contiguous() else apply_op("copy", (self,))

    # -- views --
    def permute(self, *dims):
        n = len(self.shape)
        perm = _dims(dims)
        for p in perm:
            if type(p) is not int or not 0 <= p < n:  # else already normal
                perm = tuple([norm_axis(p, n) for p in perm])
                break
        if len(perm) != n:
            raise ShapeError(f"permute of a {n}-d tensor needs {n} dims, got {perm}")
        shape = [self.shape[p] for p in perm]
        strides = [self.strides[p] for p in perm]
        return apply_view("permute", self, shape, strides, self.offset, perm=perm)

    def transpose(self, a=-2, b=-1):
        n = len(self.shape)
        perm = list(range(n))
        a, b = norm_axis(a, n), norm_axis(b, n)
        perm[a], perm[b] = perm[b], perm[a]
        return self.permute(tuple(perm))

    @property
    def T(self):
        return self.permute(tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        n = len(self.shape)
        if n < 2:
            return self.transpose(-2, -1)  # says what is wrong
        perm = _SWAP_LAST.get(n)
        if perm is None:
            perm = _SWAP_LAST[n] = (*range(n - 2), n - 1, n - 2)
        shape, strides = self.shape, self.strides
        return apply_view(
            "permute", self, (*shape[:-2], shape[-1], shape[-2]),
            (*strides[:-2], strides[-1], strides[-2]), self.offset, perm=perm,
        )  # fmt: skip

    def expand(self, *shape):
        shape = _dims(shape)
        if shape == self.shape:
            return self
        lead = len(shape) - len(self.shape)
        if -1 in shape:
            shape = tuple([self.shape[i - lead] if d == -1 else d for i, d in enumerate(shape)])
            if shape == self.shape:
                return self
        else:
            shape = tuple(shape)
        if lead < 0:
            raise ShapeError(f"cannot expand {self.shape} to {shape}")
        strides = [0] * lead
        for d, n, st in zip(self.shape, shape[lead:], self.strides):
            if d != n and d != 1:
                raise ShapeError(f"cannot expand {self.shape} to {shape}")
            strides.append(st if d == n else 0)
        return apply_view("expand", self, shape, strides, self.offset, shape=shape)

    def reshape(self, *shape):
        shape, strides = _reshaped(self.shape, self.strides, _dims(shape))
        if shape == self.shape:
            return self
        x = self
        if strides is None:
            x = apply_op("copy", (x,))
            strides = contiguous_strides(shape)
        return apply_view("reshape", x, shape, strides, x.offset, shape=shape)

    def view_as(self, other):
        return self.reshape(other.shape)

    def unsqueeze(self, axis: int):
        axis = axis % (self.ndim + 1)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def squeeze(self, axis=None):
        if axis is None:
            return self.reshape(tuple(d for d in self.shape if d != 1))
        axes = norm_axes(axis, self.ndim)
        for a in axes:
            if self.shape[a] != 1:
                raise ShapeError(f"cannot squeeze dim {a} of size {self.shape[a]}")
        return self.reshape(tuple(d for i, d in enumerate(self.shape) if i not in axes))

    def flatten(self, start=0, end=-1):
        if self.ndim == 0:
            return self.reshape((1,))
        s, e = norm_axis(start, self.ndim), norm_axis(end, self.ndim)
        mid = 1
        for d in self.shape[s : e + 1]:
            mid *= d
        return self.reshape(self.shape[:s] + (mid,) + self.shape[e + 1 :])

    def slice(self, starts, stops, steps=None):
        steps = list(steps) if steps is not None else [1] * self.ndim
        shape = [slice_len(a, b, s) for a, b, s in zip(starts, stops, steps)]
        offset = self.offset + sum(a * st for a, st in zip(starts, self.strides))
        strides = [st * s for st, s in zip(self.strides, steps)]
        return apply_view(
            "slice",
            self,
            shape,
            strides,
            offset,
            starts=tuple(starts),
            stops=tuple(stops),
            steps=tuple(steps),
        )

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if sum(1 for k in key if k is Ellipsis) > 1:
            raise ShapeError("an index can hold one Ellipsis at most")
        if n_real > self.ndim:
            raise ShapeError(f"too many indices ({n_real}) for a tensor of {self.ndim} dims")
        expanded = []
        for k in key:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (self.ndim - n_real))
            else:
                expanded.append(k)
        expanded.extend([slice(None)] * (self.ndim - sum(1 for k in expanded if k is not None)))
        starts, stops, steps = [], [], []
        out_shape: list = []  # after slicing: a kept dim's size, or None for a new axis
        takes = []
        dim = 0
        for k in expanded:
            if k is None:
                out_shape.append(None)
                continue
            size = self.shape[dim]
            if isinstance(k, TensorShape):
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
        y = self.slice(starts, stops, steps)
        y = y.reshape(tuple(1 if d is None else d for d in out_shape))
        for pos, idx in reversed(takes):
            y = C.take(y, idx, pos)
        return y

    # -- layout and indexing --
    def pad(self, lo, hi, interior=None, value=0.0):
        interior = list(interior) if interior is not None else [0] * self.ndim
        return apply_op(
            "pad", (self,), lo=tuple(lo), hi=tuple(hi), interior=tuple(interior), value=value
        )

    def cat(self, others, axis=0):
        xs = [self, *others]
        axis = norm_axis(axis, self.ndim)
        return apply_op("concat", tuple(xs), axis=axis)

    def gather(self, idx, axis):
        return apply_op("gather", (self, idx), axis=norm_axis(axis, self.ndim))

    def scatter_add(self, idx, axis, shape):
        return apply_op(
            "scatter_add", (self, idx), axis=norm_axis(axis, len(shape)), shape=tuple(shape)
        )

    def take(self, idx, axis=None):
        """Rows ``idx`` along ``axis``; without an axis, torch's ``take``: the elements at
        ``idx`` of the tensor read flat, in ``idx``'s shape."""
        if axis is None:
            return C.take(self.reshape((-1,)), idx, 0)
        return C.take(self, idx, axis)
