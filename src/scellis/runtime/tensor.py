"""The Tensor (runtime layer): data handle, geometry and autograd slots; no op bodies.

The op methods come from three mixins, ``TensorMath`` (elementwise), ``TensorShape``
(views and indexing) and ``TensorNN`` (reductions, matmul, composites, backward), so
this file stays a small record. Values reach the host only through ``await t.read()``
(and the sync ``tolist``/``item`` built on it where no event loop is running).
"""

from __future__ import annotations

import array
import asyncio
import struct

from ..autograd.tape import add_grad_hook
from ..base.dtypes import DType
from ..base.errors import ScellisError
from ..base.shapes import is_contiguous, numel
from ..devices.base import Backend, Buffer, View
from .legacy_hook import LEGACY
from .tensor_math import TensorMath
from .tensor_nn import TensorNN
from .tensor_shape import TensorShape
from .torch_index import TorchIndexMethods
from .torch_inplace import TorchInPlaceMethods
from .torch_math import TorchMathMethods
from .torch_ops import TorchOpsMethods
from .torch_reduce import TorchReduceMethods
from .torch_shape import TorchShapeMethods
from .torchlike import ElementCount, TorchLikeMethods

_loop: list = []


def run_sync(coro):
    """Drive ``coro`` to completion from synchronous code (never inside a running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise ScellisError(
            "a tensor's values were asked for synchronously inside an event "
            "loop; use `await t.read()` there"
        )
    if not _loop:
        _loop.append(asyncio.new_event_loop())
    return _loop[0].run_until_complete(coro)


def decode(data: bytes, dtype: DType) -> list:
    if dtype.code == "e":
        return list(struct.unpack(f"<{len(data) // 2}e", data))
    values = array.array(dtype.code)
    values.frombytes(data)
    if dtype.kind == "b":
        return [bool(v) for v in values]
    return values.tolist()


def nest(flat: list, shape: tuple[int, ...]):
    if not shape:
        return flat[0]
    for d in reversed(shape[1:]):
        flat = [flat[i : i + d] for i in range(0, len(flat), d)] if d else [[]] * (len(flat))
    if shape[0] == 0:
        return []
    return flat


class Tensor(
    TorchInPlaceMethods,
    TorchMathMethods,
    TorchShapeMethods,
    TorchReduceMethods,
    TorchLikeMethods,
    TorchIndexMethods,
    TorchOpsMethods,
    TensorMath,
    TensorShape,
    TensorNN,
):
    __slots__ = (
        "_buf",
        "shape",
        "strides",
        "offset",
        "dtype",
        "device",
        "requires_grad",
        "grad",
        "_node",
        "_retains_grad",
        "_grad_hooks",  # set by register_hook on a leaf only: read with getattr
        "__weakref__",
    )

    def __init__(self, buf: Buffer = None, shape=None, strides=None, offset: int = None,
                 dtype: DType = None, device: Backend = None):  # fmt: skip
        if buf.__class__ is not Buffer:  # torch's Tensor(2, 3) or Tensor([1., 2.])
            LEGACY[0](self, (buf, shape, strides, offset, dtype), device)
            return
        self._buf = buf
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.dtype = dtype
        self.device = device
        self.requires_grad = False
        self.grad: Tensor | None = None
        self._node = None
        self._retains_grad = False

    # -- geometry --
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return ElementCount(numel(self.shape))

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[dim]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def _version(self) -> tuple[int, int]:
        """What the tape compares to see an in-place change (torch's ``_version``): the
        storage and its write count, so a change through any view of the storage counts,
        and so does pointing this tensor at other storage."""
        return id(self._buf), getattr(self._buf, "version", 0)

    @property
    def device_view(self) -> View:
        """The device's view of this tensor's storage (what kernels are given)."""
        return View(self._buf, self.shape, self.strides, self.offset, self.dtype)

    def is_contiguous(self) -> bool:
        return is_contiguous(self.shape, self.strides)

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    # -- autograd --
    def detach(self) -> Tensor:
        return Tensor(self._buf, self.shape, self.strides, self.offset, self.dtype, self.device)

    def detach_(self) -> Tensor:
        """torch's in-place detach: this very tensor leaves the tape and becomes a leaf
        that needs no gradient (a hidden state cut between truncated-BPTT chunks)."""
        self._node = None
        self.requires_grad = False
        return self

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if flag and not self.dtype.is_float:
            raise ScellisError(f"only float tensors can require grad, not {self.dtype}")
        self.requires_grad = flag
        return self

    def retain_grad(self) -> None:
        self._retains_grad = True

    def register_hook(self, hook):
        """``hook(grad)`` runs when backward reaches this tensor; a tensor it returns
        replaces the gradient (torch's); ``.remove()`` on the returned handle undoes it."""
        return add_grad_hook(self, hook)

    # -- host values --
    async def read(self):
        """The values as nested Python lists (a float/int/bool for a 0-d tensor)."""
        return nest(decode(await self.read_bytes(), self.dtype), self.shape)

    async def read_bytes(self) -> bytes:
        """The values in C order in the dtype's host layout. Only the view's own elements
        leave the device: a contiguous view (``x[1]``, ``x[:1, :1]``) is read as the range
        it covers in its buffer, another is first copied into one on the device."""
        t = self.detach()
        if not t.is_contiguous():
            t = t.contiguous()
        return await t.device.read(t._buf, t.offset, t.numel)

    def tolist(self):
        return run_sync(self.read())

    def _host_bytes(self) -> bytes:
        """``read_bytes`` from synchronous code, as ``tolist`` reads (the readback every
        host has); an empty tensor reads nothing, even on the null device."""
        return run_sync(self.read_bytes()) if self.numel else b""

    def item(self):
        if self.numel != 1:
            raise ScellisError(f"item() needs a tensor of one element, got shape {self.shape}")
        v = self.tolist()
        while isinstance(v, list):
            v = v[0]
        return v

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its value (``f"{loss:.4f}"``), as torch's; any other
        as an object (an empty spec only)."""
        if self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        if self.device.name == "null" or self.numel > 64:
            body = f"shape={self.shape}"
        else:
            try:
                body = repr(self.tolist())
            except ScellisError:
                body = f"shape={self.shape}"
        return f"tensor({body}, dtype={self.dtype}, device={self.device.name}{grad})"

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())
