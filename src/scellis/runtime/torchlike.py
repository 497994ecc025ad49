"""torch's Tensor conveniences (runtime layer): a mixin of ``Tensor``.

Moves (``to``, ``cpu``), host copies (``numpy``), ``clone``, ``t``, iteration over the
first axis, in-place updates (``add_``, ``mul_``, ``zero_``, ``copy_`` ...), and torch's
``dim=`` beside the engine's ``axis=``. It comes first among ``Tensor``'s bases, so its
``to`` (device and dtype) and ``dim=`` wrappers stand in front of the op mixins'
methods, which they call through ``super()``. Methods here use only the tensor's own
methods and its device (this module sits below ``tensor``), so a new buffer is made
with the device's ``alloc``/``upload`` and an in-place write is one ``flat_gather`` run
on the device.

In-place updates are for tensors autograd does not track: on a tensor that requires
grad they are refused unless gradients are off (``with scellis.no_grad():``), as in
torch. A tensor of any dtype is written in its own storage (every view of that
storage, such as an optimizer's flat buffer, or the matrix a column of ints was taken
from, sees the change: ``view_writes``); only a view with a zero stride (an expanded
one) is pointed at new storage instead.
"""

from __future__ import annotations

import array
import struct
import sys

from ..autograd.mode import is_grad_enabled
from ..base.dtypes import as_dtype, narrowed_int
from ..base.errors import DeviceError, DTypeError, ScellisError
from ..base.shapes import contiguous_strides, norm_axes
from ..devices.base import View, get_device
from .tensor_shape import _reshaped
from .view_writes import keep_old_value, view_base, write_into_base, write_through_view
from .write_guard import guard_write


class ElementCount(int):
    """A tensor's element count: an int (``t.numel``) that torch's spelling ``t.numel()``
    may also call, so parameter counts written for torch run unchanged."""

    def __call__(self) -> int:
        return int(self)


def _is_dtype(x) -> bool:
    if not isinstance(x, str):
        return hasattr(x, "itemsize") and hasattr(x, "is_float")
    try:
        as_dtype(x)
    except DTypeError:
        return False
    return True


class TorchLikeMethods:
    """torch-named conveniences on ``Tensor``; no state of its own."""

    __slots__ = ()

    # -- where the values live --
    def to(self, *args, device=None, dtype=None, non_blocking=False, copy=False):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(other_tensor)``:
        a tensor on that device in that dtype (``self`` when nothing changes and
        ``copy`` is off). ``"cpu"`` names the reference device."""
        for a in args:
            if hasattr(a, "device") and hasattr(a, "dtype") and hasattr(a, "_buf"):
                device, dtype = a.device, a.dtype
            elif _is_dtype(a):
                dtype = a
            else:
                device = a
        dev = get_device(device) if device else self.device
        out = self
        if dev is not self.device:
            out = self._on(dev)
        if dtype is not None and as_dtype(dtype) != out.dtype:
            out = out.cast(as_dtype(dtype))
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self):
        """The tensor on the reference device (``self`` if it is there)."""
        return self.to("reference")

    def _on(self, dev):
        """A copy on device ``dev``, through host bytes (not recorded on the tape)."""
        shape, dt = tuple(self.shape), self.dtype
        buf = dev.alloc(self.numel, dt)
        dev.upload(buf, self._host_bytes())
        out = type(self)(buf, shape, contiguous_strides(shape), 0, dt, dev)
        return out.requires_grad_() if self.requires_grad else out

    def numpy(self, *, force: bool = False):
        """A NumPy array holding a copy of the values (native hosts only: the browser has
        no NumPy; ``tolist()`` works everywhere)."""
        if self.requires_grad and not force:
            raise ScellisError("numpy() of a tensor that requires grad; use t.detach().numpy()")
        try:
            ref = get_device("reference")
        except DeviceError:
            raise ScellisError("numpy() needs NumPy, which this host lacks; use tolist()") from None
        return ref.host_array(self._host_bytes(), self.shape, self.dtype)

    # NumPy defers to a tensor's own reflected operators (``np.float64(2) * t`` is a
    # tensor, as in torch) rather than turning the tensor into an array first
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        """``np.array(t)`` / ``np.asarray(t)`` (and so scikit-learn's metrics on a
        tensor): the values, as ``numpy()`` gives them, rather than an array of 0-d
        tensors."""
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    # -- copies and small views --
    def clone(self):
        """A copy in new storage; gradients flow back through it, as in torch."""
        return self.prim("copy")

    def view(self, *shape):
        """torch's ``view``: the same storage in another shape; only where no copy is
        needed, else the advice to ``reshape``. As in torch, a strided tensor views
        where the new dims split or join only dims laid out one after another (a
        ``split`` piece's last dim into heads: ``q.view(B, T, H, C // H)``)."""
        dims = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if any(not isinstance(d, int) or isinstance(d, bool) for d in dims):
            raise ScellisError(
                f"view takes a shape (ints), got {shape!r}; dtype views are not supported"
            )
        if not self.is_contiguous() and _reshaped(self.shape, self.strides, dims)[1] is None:
            raise ScellisError(
                f"view of a non-contiguous tensor (shape {self.shape}, strides {self.strides}) "
                "needs a copy; use .reshape(...) (or .contiguous().view(...))"
            )
        return self.reshape(dims)

    def split(self, split_size_or_sections, dim=0):
        """Pieces along ``dim``: of ``split_size`` each (the last may be shorter), or of
        the listed sizes; views, as torch's."""
        n, d = self.shape[dim], dim % self.ndim
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            if size <= 0:
                raise ScellisError(f"split size must be positive, got {size}")
            sizes = [min(size, n - a) for a in range(0, n, size)]
        else:
            sizes = list(split_size_or_sections)
            if sum(sizes) != n:
                raise ScellisError(f"split sizes {sizes} do not add up to {n} along dim {dim}")
        out, at = [], 0
        for k in sizes:
            out.append(self[(slice(None),) * d + (slice(at, at + k),)])
            at += k
        return tuple(out)

    def chunk(self, chunks: int, dim=0):
        """``chunks`` pieces along ``dim`` of ceil(n / chunks) each (fewer when they run out)."""
        if chunks <= 0:
            raise ScellisError(f"chunk needs a positive number of chunks, got {chunks}")
        return self.split(max(1, -(-self.shape[dim] // chunks)), dim)

    def is_floating_point(self) -> bool:
        return self.dtype.is_float

    def element_size(self) -> int:
        return self.dtype.itemsize

    def new_zeros(self, *size, dtype=None):
        return self.new_full(size, 0, dtype=dtype)

    def new_ones(self, *size, dtype=None):
        return self.new_full(size, 1, dtype=dtype)

    def new_full(self, size, fill_value, *, dtype=None):
        """A tensor of ``size`` filled with ``fill_value`` on this tensor's device, in its
        dtype unless given (uploaded from host bytes: no tape, no kernel)."""
        dims = (size,) if isinstance(size, int) else tuple(size)
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = tuple(dims[0])
        dt = as_dtype(dtype) if dtype is not None else self.dtype
        n = 1
        for d in dims:
            n *= d
        buf = self.device.alloc(n, dt)
        if n:
            self.device.upload(buf, _encode([fill_value] * n, dt))
        return type(self)(buf, dims, contiguous_strides(dims), 0, dt, self.device)

    def t(self):
        """The transpose of a matrix (a vector or scalar is returned as it is)."""
        if self.ndim > 2:
            raise ScellisError(f"t() expects a tensor of at most 2 dims, got {self.ndim}")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def __deepcopy__(self, memo):
        """A copy in new storage on the same device, ``requires_grad`` and ``grad``
        copied too (``copy.deepcopy(model)``, as torch's)."""
        from ..autograd.mode import no_grad

        with no_grad():
            out = self.detach().prim("copy")
            out.requires_grad = self.requires_grad
            if self.grad is not None:
                out.grad = self.grad.detach().prim("copy")
        memo[id(self)] = out
        return out

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.shape[0]):
            yield self[i]

    # -- torch's spellings: ``dim=`` for the engine's ``axis=``, dtype shorthands --
    # (before the op mixins in Tensor's bases, so these wrap theirs through super())
    def dim(self) -> int:
        return self.ndim

    def sum(self, dim=None, keepdim=False, *, axis=None, dtype=None):
        """The sum; a bool tensor counts its true elements (in i32, torch's int64)."""
        x = self.cast(dtype) if dtype is not None else self
        x = x.cast("i32") if x.dtype.kind == "b" else x
        return super(TorchLikeMethods, x).sum(_axis(dim, axis), keepdim)

    def mean(self, dim=None, keepdim=False, *, axis=None):
        return super().mean(_axis(dim, axis), keepdim)

    def max(self, dim=None, keepdim=False, *, axis=None):
        """The maximum; over a dim, torch's pair ``(values, indices)``; of two tensors,
        the elementwise maximum."""
        return _extreme(self, "max", dim, keepdim, axis)

    def min(self, dim=None, keepdim=False, *, axis=None):
        """As ``max``, for the minimum."""
        return _extreme(self, "min", dim, keepdim, axis)

    def argmin(self, dim=None, keepdim=False, *, axis=None):
        """Where the minimum is (the first such place): ``argmax`` of the negation (of
        the i32 cast for bool)."""
        x = self.cast("i32") if self.dtype.kind == "b" else self
        return (-x).argmax(dim, keepdim, axis=axis)

    def amax(self, dim=None, keepdim=False, *, axis=None):
        return super().amax(_axis(dim, axis), keepdim)

    def amin(self, dim=None, keepdim=False, *, axis=None):
        return super().amin(_axis(dim, axis), keepdim)

    def argmax(self, dim=None, keepdim=False, *, axis=None):
        return super().argmax(_axis(dim, axis), keepdim)

    def var(self, dim=None, keepdim=False, *, axis=None, correction=1, unbiased=None):
        if unbiased is not None:
            correction = 1 if unbiased else 0
        return super().var(_axis(dim, axis), keepdim, correction)

    def std(self, dim=None, keepdim=False, *, axis=None, correction=1, unbiased=None):
        if unbiased is not None:
            correction = 1 if unbiased else 0
        return super().std(_axis(dim, axis), keepdim, correction)

    def logsumexp(self, dim=None, keepdim=False, *, axis=None):
        return super().logsumexp(_axis(dim, axis, -1), keepdim)

    def softmax(self, dim=None, *, axis=None, dtype=None):
        x = self.cast(dtype) if dtype is not None else self
        return super(TorchLikeMethods, x).softmax(_axis(dim, axis, -1))

    def log_softmax(self, dim=None, *, axis=None, dtype=None):
        x = self.cast(dtype) if dtype is not None else self
        return super(TorchLikeMethods, x).log_softmax(_axis(dim, axis, -1))

    def unsqueeze(self, dim=None, *, axis=None):
        return super().unsqueeze(_axis(dim, axis))

    def squeeze(self, dim=None, *, axis=None):
        """torch's: a named dim whose size is not 1 is left as it is (no error)."""
        d = _axis(dim, axis)
        if d is None or self.ndim == 0:
            return super().squeeze(d if self.ndim else None)
        dims = [d] if isinstance(d, int) else list(d)
        return super().squeeze(tuple(a for a in norm_axes(dims, self.ndim) if self.shape[a] == 1))

    def flatten(self, start_dim=None, end_dim=None, *, start=None, end=None):
        return super().flatten(_axis(start_dim, start, 0), _axis(end_dim, end, -1))

    def double(self):
        return self.cast("f64")

    def half(self):
        return self.cast("f16")

    def int(self):
        """i32. An integer tensor here mostly stands for torch's int64 (the default of
        ``tensor`` and ``arange``), whose ``.int()`` is a copy: writes into the result
        must not reach ``self``, so an i32 tensor gives a fresh copy too."""
        out = self.cast("i32")
        return self.clone() if out is self else out

    def long(self):
        """i32: the engine's integers are 32-bit (WGSL has no i64); said once."""
        return self.cast(narrowed_int("long"))

    # -- in-place updates --
    def _assign(self, new, what: str):
        """The one in-place write of a tensor method (``add_``, ``+=``, ``x[i] = v``).

        With gradients on, an op on an intermediate (or one whose new value depends
        on a tensor that requires grad) is recorded: ``self`` becomes the result,
        its node included, so backward sees it and a node that saved the old value
        refuses, as torch's version counter does; where ``self`` is a view of an
        intermediate, that tensor takes the write. Otherwise the values are written
        where they are (views of the same float storage see them)."""
        if tuple(new.shape) != tuple(self.shape):
            new = new.expand(self.shape)
        if new.device is not self.device:
            new = new._on(self.device)
        tracked = is_grad_enabled() and (self.requires_grad or new.requires_grad)
        if tracked and not (self.is_leaf and self.requires_grad):
            new = new.cast(self.dtype)
            new = new.prim("copy") if new._buf is self._buf else new
            base = view_base(self)
            if base is not None:  # h[:, 0].mul_(2): h takes the write, as torch's
                return write_into_base(self, base, new, what)
            keep_old_value(self, new)
            self._buf, self.strides, self.offset = new._buf, new.strides, new.offset
            self._node, self.requires_grad = new._node, True
            return self
        guard_write(self, what)  # counts the write: a backward that saved this storage refuses
        new = new.detach().cast(self.dtype).prim("copy")  # fresh storage: never aliases self
        if self.is_contiguous() and self.numel:
            flat = View(new._buf, (self.numel,), (1,), 0, self.dtype)
            dest = View(self._buf, (self.numel,), (1,), self.offset, self.dtype)
            self.device.run("flat_gather", [flat], [dest], {})
        elif self.numel and all(s > 0 for s in self.strides):
            write_through_view(self, new)  # x[:, 0].mul_(2), x.t().add_(1): x sees it
        else:  # empty, or an expanded view (one storage place for many elements)
            self._buf, self.strides, self.offset = new._buf, new.strides, new.offset
        return self

    def add_(self, other, alpha=1):
        return self._assign(self + (other * alpha if alpha != 1 else other), "add_")

    def sub_(self, other, alpha=1):
        return self._assign(self - (other * alpha if alpha != 1 else other), "sub_")

    def mul_(self, other):
        return self._assign(self * other, "mul_")

    def div_(self, other):
        return self._assign(self / other, "div_")

    def clamp_(self, min=None, max=None):
        return self._assign(self.clamp(min, max), "clamp_")

    def fill_(self, value):
        return self._assign(self.full_like(value), "fill_")

    def zero_(self):
        return self._assign(self.zeros_like(), "zero_")

    def copy_(self, src):
        """Overwrite the values with ``src`` (broadcast, cast, moved as needed)."""
        if not hasattr(src, "_buf"):
            raise ScellisError(f"copy_ takes a tensor, not {type(src).__name__}")
        return self._assign(src, "copy_")


def _encode(values: list, dtype) -> bytes:
    """Host bytes of flat ``values`` in ``dtype`` (bool: one byte each; little-endian)."""
    if dtype.code == "e":
        return struct.pack(f"<{len(values)}e", *values)
    if dtype.kind == "b":
        return bytes(1 if v else 0 for v in values)
    out = array.array(dtype.code, values)
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def _extreme(x, which: str, dim, keepdim, axis):
    """torch's ``max``/``min``: of all elements, over a dim (a values-indices pair),
    or of two tensors elementwise."""
    from .torch_ops import ValuesIndices  # below this module in the mixin order

    if hasattr(dim, "_buf"):
        return x.maximum(dim) if which == "max" else x.minimum(dim)
    d = _axis(dim, axis)
    base = super(TorchLikeMethods, x)
    values = base.max(d, keepdim) if which == "max" else base.min(d, keepdim)
    if d is None or isinstance(d, (tuple, list)):
        return values
    where = x.argmax(d, keepdim) if which == "max" else x.argmin(d, keepdim)
    if x.requires_grad:  # torch's gradient goes to the index only, not shared by ties
        d = d % x.ndim
        values = x.gather(d, where if keepdim else where.unsqueeze(d))
        values = values if keepdim else values.squeeze(d)
    return ValuesIndices(values, where)


def _axis(dim, axis, default=None):
    """torch's ``dim`` or the engine's ``axis`` (one of them), else ``default``."""
    if dim is not None and axis is not None:
        raise ScellisError("give dim or axis, not both")
    if axis is not None:
        return axis
    return dim if dim is not None else default
