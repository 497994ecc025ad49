"""torch's movement, selection and scatter methods (runtime layer): a mixin of ``Tensor``.

``roll``, ``flip``, ``narrow``, ``unfold``, ``unflatten``, ``movedim``, ``select``, ``unbind``,
``index_select``, ``diag``/``diagonal``/``trace``, and torch's ``scatter``,
``scatter_add`` and ``index_add`` (``dim`` first), each over views, ``take``, ``gather``
and the ``scatter_add`` primitive, so gradients flow as torch's do. The engine's own
``scatter_add(idx, axis, shape)`` (what the gather VJP calls) is still taken when an
index tensor comes first.
"""

from __future__ import annotations

from ..base.dtypes import as_dtype, narrowed_int
from ..base.errors import ScellisError, ShapeError
from ..base.shapes import contiguous_strides, norm_axis
from ..ops import composites as C
from .primitive import apply_op
from .tensor_math import broadcast


def _is_tensor(x) -> bool:
    return hasattr(x, "_buf")


def _dim_list(dims, ndim: int) -> list[int]:
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [norm_axis(d, ndim) for d in dims]


def _i32(index):
    return index if index.dtype.name == "i32" else index.cast("i32")


# torch's legacy type names (``x.type(torch.FloatTensor)``'s string form) -> dtype
_TYPE_NAMES = {
    "torch.FloatTensor": "f32", "torch.DoubleTensor": "f64", "torch.HalfTensor": "f16",
    "torch.IntTensor": "i32", "torch.LongTensor": "i32", "torch.BoolTensor": "bool",
}  # fmt: skip
_NAME_OF = {
    "f32": "torch.FloatTensor", "f64": "torch.DoubleTensor", "f16": "torch.HalfTensor",
    "i32": "torch.IntTensor", "u32": "torch.IntTensor", "bool": "torch.BoolTensor",
}  # fmt: skip


class TorchShapeMethods:
    """torch-named movement and scatter methods; no state of its own."""

    __slots__ = ()

    # -- dtype spellings --
    def type(self, dtype=None, non_blocking=False):
        """Without a dtype, torch's type name (``'torch.FloatTensor'``); else the cast."""
        if dtype is None:
            return _NAME_OF[self.dtype.name]
        dtype = getattr(dtype, "legacy_dtype", dtype)  # t.type(torch.FloatTensor)
        name = _TYPE_NAMES.get(dtype, dtype) if isinstance(dtype, str) else dtype
        return self.cast(as_dtype(name))

    def type_as(self, other):
        return self.cast(other.dtype)

    def bool(self):
        return self.cast("bool")

    def byte(self):
        return self.cast(narrowed_int("uint8"))

    def char(self):
        return self.cast(narrowed_int("int8"))

    def short(self):
        return self.cast(narrowed_int("int16"))

    @property
    def is_cuda(self) -> bool:
        """False: tensors live on the engine's devices, never on CUDA."""
        return False

    def get_device(self) -> int:
        """-1, torch's answer for a tensor off CUDA."""
        return -1

    def nelement(self) -> int:
        return int(self.numel)

    def ndimension(self) -> int:
        return self.ndim

    def data_ptr(self) -> int:
        """An identity of the storage and offset (equal for views of one place), not an
        address: device memory has none to give."""
        return id(self._buf) * 64 + self.offset * self.dtype.itemsize

    @property
    def grad_fn(self):
        """The tape node that made this tensor (None for a leaf or outside autograd)."""
        return self._node

    def apply_(self, callable):  # noqa: A002 (torch's name)
        """Each element replaced by ``callable(element)``, on the host (as torch's, which
        runs on CPU tensors only)."""
        from .creation import tensor

        flat = [callable(v) for v in self.reshape((-1,)).tolist()]
        new = tensor(flat, device=self.device, dtype=self.dtype).reshape(self.shape)
        return self._assign(new, "apply_")

    # -- views --
    def reshape_as(self, other):
        return self.reshape(other.shape)

    def expand_as(self, other):
        return self.expand(other.shape)

    def ravel(self):
        return self.reshape((-1,))

    def narrow(self, dim, start, length):
        d = norm_axis(dim, self.ndim)
        start = int(start) + (self.shape[d] if int(start) < 0 else 0)
        return self[(slice(None),) * d + (slice(start, start + int(length)),)]

    def unfold(self, dimension, size, step):
        """Windows of ``size`` every ``step`` along ``dimension``: that axis becomes the
        window count and the window runs along a new last axis, as torch's. A gather
        rather than a view, so writes to it do not reach this tensor."""
        d = norm_axis(dimension, self.ndim)
        n, size, step = self.shape[d], int(size), int(step)
        if size < 0 or size > n or step < 1:
            raise ShapeError(f"unfold: size {size} step {step} on a dimension of {n}")
        starts = range(0, n - size + 1, step)
        grid = _tensor_like(self, [[s + k for k in range(size)] for s in starts])
        return C.take(self, grid, d).movedim(d + 1, -1)

    def select(self, dim, index):
        d = norm_axis(dim, self.ndim)
        return self[(slice(None),) * d + (int(index),)]

    def unbind(self, dim=0):
        d = norm_axis(dim, self.ndim)
        return tuple(self.select(d, i) for i in range(self.shape[d]))

    def unflatten(self, dim, sizes):
        d = norm_axis(dim, self.ndim)
        return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d + 1 :])

    def movedim(self, source, destination):
        src, dst = _dim_list(source, self.ndim), _dim_list(destination, self.ndim)
        if len(src) != len(dst):
            raise ShapeError(f"movedim: {len(src)} sources for {len(dst)} destinations")
        rest = iter([d for d in range(self.ndim) if d not in src])
        placed = dict(zip(dst, src))
        return self.permute([placed[i] if i in placed else next(rest) for i in range(self.ndim)])

    moveaxis = movedim

    def swapaxes(self, axis0, axis1):
        return self.transpose(axis0, axis1)

    swapdims = swapaxes

    # -- reorderings --
    def flip(self, *dims):
        dims = dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims
        out = self
        for d in _dim_list(dims, self.ndim):
            out = C.flip(out, d)
        return out

    def fliplr(self):
        return self.flip(1)

    def flipud(self):
        return self.flip(0)

    def roll(self, shifts, dims=None):
        """Elements shifted ``shifts`` places along ``dims`` (wrapping around); without
        dims, over the flattened tensor."""
        if dims is None:
            return self.reshape((-1,)).roll(shifts, 0).reshape(self.shape)
        shifts = [shifts] if isinstance(shifts, int) else list(shifts)
        dims = _dim_list(dims, self.ndim)
        if len(shifts) != len(dims):
            raise ShapeError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
        out = self
        for s, d in zip(shifts, dims):
            n = self.shape[d]
            k = s % n if n else 0
            if k:
                lead = (slice(None),) * d
                out = out[lead + (slice(n - k, n),)].cat([out[lead + (slice(0, n - k),)]], d)
        return out

    # -- selection by index --
    def index_select(self, dim, index):
        return C.take(self, _i32(index).reshape((-1,)), norm_axis(dim, self.ndim))

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        """Each element (slice along ``dim``) repeated ``repeats`` times in place: the
        free function's, as a method."""
        from .torch_free import repeat_interleave  # the free functions sit above Tensor

        return repeat_interleave(self, repeats, dim, output_size=output_size)

    def masked_select(self, mask):
        """The elements where ``mask`` (broadcast to this shape) holds, flattened."""
        x, m = broadcast(self, mask)
        return x.reshape((-1,))[m.reshape((-1,))]

    def nonzero(self, *, as_tuple=False):
        """The indices of the non-zero elements, [n, ndim] (read back: the count decides
        the shape, as torch synchronises here too)."""
        from .creation import tensor

        flat = (self != 0).reshape((-1,)).tolist() if self.ndim else [bool(self.item())]
        rows, strides = [], [1] * self.ndim
        for i in range(self.ndim - 2, -1, -1):
            strides[i] = strides[i + 1] * self.shape[i + 1]
        for k, hit in enumerate(flat):
            if hit:
                rows.append([(k // st) % n for st, n in zip(strides, self.shape)])
        out = tensor(rows or [], device=self.device, dtype="i32").reshape((len(rows), self.ndim))
        return tuple(out[:, i] for i in range(self.ndim)) if as_tuple else out

    def argwhere(self):
        return self.nonzero()

    # -- diagonals --
    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal of dims ``dim1``, ``dim2`` (moved last), shifted by ``offset``."""
        a, b = norm_axis(dim1, self.ndim), norm_axis(dim2, self.ndim)
        x = self.movedim((a, b), (-2, -1))
        n, m = x.shape[-2], x.shape[-1]
        rows = range(max(0, -offset), min(n, m - offset))
        if not len(rows):
            return x[..., 0, :0]
        flat = x.reshape(x.shape[:-2] + (n * m,))
        # a strided slice of the flattened matrix, not a gather: torch's diagonal is a
        # view, and writes into it (``A.diagonal().fill_(1)``) reach the matrix
        start = rows[0] * (m + 1) + offset
        return flat[..., start : start + (len(rows) - 1) * (m + 1) + 1 : m + 1]

    def diag(self, diagonal=0):
        """Of a vector, the square matrix with it on a diagonal; of a matrix, that diagonal."""
        if self.ndim == 2:
            return self.diagonal(diagonal).clone()  # a copy in torch, unlike diagonal
        if self.ndim != 1:
            raise ShapeError(f"diag takes a 1-d or 2-d tensor, got {self.ndim} dims")
        n, k = self.shape[0], abs(int(diagonal))
        size = n + k
        square = self.unsqueeze(0).expand((n, n)) * (
            self.arange_like(n).unsqueeze(1) == self.arange_like(n).unsqueeze(0)
        ).cast(self.dtype)
        lo = (0, k) if diagonal > 0 else (k, 0)
        return square.pad(lo, (size - n - lo[0], size - n - lo[1]))

    def trace(self):
        if self.ndim != 2:
            raise ShapeError(f"trace takes a matrix, got {self.ndim} dims")
        return self.diagonal().sum()

    # -- scatters (torch's argument order) --
    def scatter_add(self, *args, **kwargs):
        """torch's ``scatter_add(dim, index, src)``: ``self`` plus ``src`` added at
        ``index`` along ``dim``. With an index tensor first, the engine's
        ``scatter_add(idx, axis, shape)``."""
        if args and _is_tensor(args[0]):
            return super().scatter_add(*args, **kwargs)
        dim, index, src = _scatter_args(args, kwargs)
        return self + _scattered(self, dim, index, src)

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        """``self`` with ``src`` (or ``value``) written at ``index`` along ``dim``
        (``reduce="add"`` as torch's; repeated indices in a plain scatter
        take the mean of their sources, one of the values torch may leave)."""
        src = value if src is None else src
        d = norm_axis(dim, self.ndim)
        idx = _i32(index)
        ones = idx.ones_like(self.dtype)
        hits = _scattered(self, d, idx, ones)
        if not _is_tensor(src):
            src = ones * src
        if reduce == "add":
            return self + _scattered(self, d, idx, src)
        if reduce is not None:
            raise ScellisError(
                f"scatter(reduce={reduce!r}) is not supported; use reduce='add' or "
                "scatter_reduce over a product of your own"
            )
        sums = _scattered(self, d, idx, src)
        return (sums / hits.where(hits > 0.0, 1.0)).where(hits > 0.0, self)

    def index_add(self, dim, index, source, *, alpha=1):
        """``self`` plus ``alpha * source``'s slices added at ``index`` along ``dim``."""
        d = norm_axis(dim, self.ndim)
        idx = _i32(index).reshape([-1 if i == d else 1 for i in range(source.ndim)])
        src = source * alpha if alpha != 1 else source
        return self + _scattered(self, d, idx.expand(source.shape), src)

    def fill_diagonal_(self, fill_value, wrap=False):
        """``fill_value`` written on the main diagonal, as torch's: every dim the same
        size, or a 2-d matrix; ``wrap`` continues a tall matrix's diagonal below it, one
        row skipped each time round."""
        if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
            raise ShapeError(f"fill_diagonal_ needs a matrix or equal dims, got {self.shape}")
        size, step = int(self.numel), sum(contiguous_strides(self.shape))
        last = size if wrap and self.ndim == 2 else min(self.shape) * step
        marks = [False] * size
        for at in range(0, min(last, size), step):
            marks[at] = True
        mask = _tensor_like(self, marks).cast("bool").reshape(self.shape)
        return self._assign(self.masked_fill(mask, fill_value), "fill_diagonal_")

    def index_fill(self, dim, index, value):
        d = norm_axis(dim, self.ndim)
        n = self.shape[d]
        picked = (_i32(index).reshape((-1, 1)) == self.arange_like(n).cast("i32")).any(0)
        shape = [n if i == d else 1 for i in range(self.ndim)]
        return self.masked_fill(picked.reshape(shape), value)


def _tensor_like(x, values):
    from .creation import tensor

    return tensor(values, device=x.device, dtype="i32")


def _scatter_args(args, kwargs):
    names = ("dim", "index", "src")
    got = dict(zip(names, args), **kwargs)
    if "src" not in got and "value" in got:
        got["src"] = got.pop("value")
    return got["dim"], got["index"], got["src"]


def _scattered(x, dim, index, src):
    """Zeros of ``x``'s shape with ``src`` added at ``index`` along ``dim`` (src cut to
    the index's shape, as torch reads it)."""
    d = norm_axis(dim, x.ndim)
    index = _i32(index)
    src = src if _is_tensor(src) else index.ones_like(x.dtype) * src
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, n) for n in index.shape)]
    src = src.cast(x.dtype) if src.dtype != x.dtype else src
    return apply_op("scatter_add", (src, index), axis=d, shape=tuple(x.shape))
