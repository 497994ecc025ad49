"""The backend protocol (devices layer) and the registry of backends by name.

A backend owns buffers and runs primitives: ``alloc``, ``upload``, async ``read`` and
``run(op, inputs, outputs, attrs)``, where inputs are strided views and outputs are
fresh contiguous views. Nothing above this layer knows how a backend stores data.
Host data crosses the boundary as bytes in the dtype's host layout (bool: one byte).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
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
        release = getattr(self.backend, "release", None)
        if release is not None and self.handle is not None:
            try:
                release(self)
            except Exception:  # interpreter shutdown: the device may be gone already
                pass


@dataclass(frozen=True)
class View:
    """A strided window on a buffer, in elements."""

    buf: Buffer
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: DType


class Backend(Protocol):
    name: str

    def supports(self, dtype: DType) -> bool: ...

    def alloc(self, numel: int, dtype: DType) -> Buffer: ...

    def upload(self, buf: Buffer, data: bytes) -> None: ...

    async def read(self, buf: Buffer) -> bytes: ...

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None: ...


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


def get_device(name: str | Backend) -> Backend:
    if not isinstance(name, str):
        return name
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
