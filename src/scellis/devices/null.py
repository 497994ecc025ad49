"""The null device (devices layer): shapes and dtypes only, no data, no NumPy.

Used to compile and validate, and to prove the core runs where NumPy does not.
"""

from __future__ import annotations

from typing import NamedTuple

from ..base.dtypes import DType
from ..base.errors import DeviceError
from .base import Buffer, OneInstance, View


class NullBackend(OneInstance):
    name = "null"

    def supports(self, dtype: DType) -> bool:
        return True

    def alloc(self, numel: int, dtype: DType) -> Buffer:
        return Buffer(self, object(), numel, dtype)

    def upload(self, buf: Buffer, data: bytes) -> None:
        if len(data) != buf.numel * buf.dtype.itemsize:
            raise DeviceError("upload size does not match the buffer")

    async def read(self, buf: Buffer, start: int = 0, count: int | None = None) -> bytes:
        raise DeviceError("the null device holds no values; use 'reference' or 'webgpu'")

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None:
        pass


class TraceHandle:
    """A traced buffer's identity: a serial number, stable across one trace."""

    __slots__ = ("serial",)

    def __init__(self, serial: int):
        self.serial = serial

    def __repr__(self) -> str:
        return f"%{self.serial}"


class TracedView(NamedTuple):
    """A view as a trace keeps it: by buffer serial, so the trace holds no buffer alive."""

    serial: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: DType


def _traced(v: View) -> TracedView:
    return TracedView(v.buf.handle.serial, tuple(v.shape), tuple(v.strides), v.offset, v.dtype)


class TracingBackend(NullBackend):
    """A null device that records what a real device would be asked to do.

    Every ``alloc``, ``release`` (the buffer's last reference dropped), ``upload`` and
    ``run`` is appended to ``events`` in order, so the same Python code run here and on
    a real device makes the same requests: the IR reads programs and buffer lifetimes
    from this list. Uploaded bytes are kept (a trace can be replayed with its
    constants); ``phase`` and ``scope`` label the events that follow.
    """

    def __init__(self, supports_f16: bool = True, name: str = "null"):
        # ``name``: the device the traced code believes it runs on (code that picks a
        # path by device name then takes the target's path)
        self.name = name
        self.events: list[tuple] = []
        self.phase = ""
        self.scope = ""
        self._serial = 0
        self._f16 = supports_f16

    def supports(self, dtype: DType) -> bool:
        return dtype.name != "f16" or self._f16

    def alloc(self, numel: int, dtype: DType) -> Buffer:
        self._serial += 1
        h = TraceHandle(self._serial)
        self.events.append(("alloc", h.serial, numel, dtype, self.phase, self.scope))
        return Buffer(self, h, numel, dtype)

    def release(self, buf: Buffer) -> None:
        self.events.append(("release", buf.handle.serial))

    def empty_pool(self) -> None:
        """What a pooling device does when its free storages are handed back."""
        self.events.append(("empty_pool",))

    def upload(self, buf: Buffer, data: bytes) -> None:
        super().upload(buf, data)
        self.events.append(("upload", buf.handle.serial, bytes(data)))

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None:
        ins, outs = [_traced(v) for v in inputs], [_traced(v) for v in outputs]
        self.events.append(("run", op, ins, outs, dict(attrs), self.phase, self.scope))
