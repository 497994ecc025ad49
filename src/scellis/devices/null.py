"""The null device (devices layer): shapes and dtypes only, no data, no NumPy.

Used to compile and validate, and to prove the core runs where NumPy does not.
"""

from __future__ import annotations

from ..base.dtypes import DType
from ..base.errors import DeviceError
from .base import Buffer, View


class NullBackend:
    name = "null"

    def supports(self, dtype: DType) -> bool:
        return True

    def alloc(self, numel: int, dtype: DType) -> Buffer:
        return Buffer(self, object(), numel, dtype)

    def upload(self, buf: Buffer, data: bytes) -> None:
        if len(data) != buf.numel * buf.dtype.itemsize:
            raise DeviceError("upload size does not match the buffer")

    async def read(self, buf: Buffer) -> bytes:
        raise DeviceError("the null device holds no values; use 'reference' or 'webgpu'")

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None:
        pass
