"""The backend protocol (devices layer) and the registry of backends by name.

A backend owns buffers and runs primitives: ``alloc``, ``upload``, async ``read`` and
``run(op, inputs, outputs, attrs)``, where inputs are strided views and outputs are
fresh contiguous views. A backend may also offer ``run_new(op, inputs, attrs, shape,
numel, dtype)``: the one-output case with the result in a new buffer it makes, or None
to be served by ``alloc`` and ``run`` (the reference backend's shorter path). Nothing
above this layer knows how a backend stores data.
Host data crosses the boundary as bytes in the dtype's host layout (bool: one byte).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from ..base.dtypes import DType
from ..base.errors import DeviceError


class Buffer:
    """A device allocation of ``numel`` elements of ``dtype``; ``handle`` is the backend's.
    ``version`` counts the in-place writes made through a tensor's torch-style methods
    (``add_``, ``copy_`` ...), for autograd's check that saved tensors did not change."""

    __slots__ = ("backend", "handle", "numel", "dtype", "version", "__weakref__")

    def __init__(self, backend: Backend, handle: Any, numel: int, dtype: DType):
        self.backend, self.handle, self.numel, self.dtype = backend, handle, numel, dtype
        self.version = 0

    def __del__(self):
        # a Ctrl-C can land inside __init__, leaving the slots unset
        release = getattr(getattr(self, "backend", None), "release", None)
        if release is not None and getattr(self, "handle", None) is not None:
            try:
                release(self)
            except Exception:  # interpreter shutdown: the device may be gone already
                pass


class View:
    """A strided window on a buffer, in elements; treated as immutable.

    A plain slotted class rather than a frozen dataclass: every op makes one per input
    and output, and a frozen dataclass's ``__init__`` costs several times as much."""

    __slots__ = ("buf", "shape", "strides", "offset", "dtype")

    def __init__(self, buf: Buffer, shape, strides, offset: int, dtype: DType):
        self.buf, self.shape, self.strides = buf, shape, strides
        self.offset, self.dtype = offset, dtype

    def _key(self) -> tuple:
        return (self.buf, self.shape, self.strides, self.offset, self.dtype)

    def __eq__(self, other) -> bool:
        return type(other) is View and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"View(buf={self.buf!r}, shape={self.shape}, strides={self.strides}, "
            f"offset={self.offset}, dtype={self.dtype!r})"
        )


class Backend(Protocol):
    name: str

    def supports(self, dtype: DType) -> bool: ...

    def alloc(self, numel: int, dtype: DType) -> Buffer: ...

    def upload(self, buf: Buffer, data: bytes) -> None: ...

    async def read(self, buf: Buffer, start: int = 0, count: int | None = None) -> bytes:
        """Elements ``[start, start + count)`` of ``buf`` (to its end by default), in
        the host layout; only those cross from the device."""

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None: ...


class OneInstance:
    """A backend is one object per process (its buffers, its GPU handles): copying a
    tensor or a module (``copy.deepcopy(model)``) copies the values, never the device."""

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


# name -> "module:Class"; imported on first use so NumPy/wgpu load only when asked for
_REGISTRY = {
    "reference": "scellis.devices.reference:ReferenceBackend",
    "webgpu": "scellis.devices.webgpu:WebGPUBackend",
    "null": "scellis.devices.null:NullBackend",
}
_INSTANCES: dict[str, Backend] = {}


def register_device(name: str, target: str) -> None:
    _REGISTRY[name] = target


def available_devices() -> list[str]:
    return sorted(_REGISTRY)


# torch's device names for ours: scripts written for torch say "cpu"
_TORCH_NAMES = {"cpu": "reference"}


def get_device(name) -> Backend:
    """The backend a name stands for: ours, torch's ``"cpu"`` (``"cpu:0"``), or a
    ``scellis.device``; a backend is itself."""
    if isinstance(name, device):
        name = name.type
    if not isinstance(name, str):
        return name
    name = _TORCH_NAMES.get(name.split(":")[0], name)
    dev = _INSTANCES.get(name)
    if dev is not None:
        return dev
    target = _REGISTRY.get(name)
    if target is None:
        raise DeviceError(f"unknown device {name!r}; known: {', '.join(available_devices())}")
    module, cls = target.split(":")
    try:
        dev = getattr(importlib.import_module(module), cls)()
    except ImportError as e:
        hint = f"; pip install {e.name} (a plain `pip install scellis` brings it)" if e.name else ""
        raise DeviceError(f"device {name!r} is not available here: {e}{hint}") from None
    _INSTANCES[name] = dev
    return dev


class device:  # noqa: N801 (torch's spelling: `torch.device("cpu")`)
    """A device by name, as torch's ``torch.device``: ``device("cpu")`` is the
    reference device; it equals the backend it names (``x.device == device("cpu")``),
    and ``str()`` gives torch's name."""

    def __init__(self, type, index=None):  # noqa: A002 (torch's keyword)
        if isinstance(type, device):
            type, index = type.type, type.index
        elif not isinstance(type, str):
            type = getattr(type, "type", None) or type.name
        base, _, at = type.partition(":")
        self.type = "cpu" if base == "reference" else base
        self.index = int(at) if at else index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type={self.type!r})"

    def _backend_name(self) -> str:
        return _TORCH_NAMES.get(self.type, self.type)

    def __eq__(self, other) -> bool:
        if isinstance(other, device):
            return (self.type, self.index) == (other.type, other.index)
        name = getattr(other, "name", None)
        return (
            isinstance(name, str)
            and not isinstance(other, str)
            and (name == self._backend_name() and self.index in (None, 0))
        )

    def __hash__(self) -> int:
        return hash((self.type, self.index))
