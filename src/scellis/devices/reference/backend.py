"""Reference backend (devices layer): buffers are 1-D NumPy arrays; kernels in a table."""

from __future__ import annotations

import time

import numpy as np

from ...base.dtypes import DType
from ...base.errors import DeviceError
from ..base import Buffer, OneInstance, View
from .attention import KERNELS as _ATTN_KERNELS
from .kernels import KERNELS as _BASE_KERNELS
from .norm import KERNELS as _NORM_KERNELS
from .quant import dequantize_kernel, qmatmul, quant_absmax, quant_codes
from .recurrent import KERNELS as _RNN_KERNELS

QUANT_KERNELS = {
    "qmatmul": qmatmul,
    "quant_absmax": quant_absmax,
    "quant_codes": quant_codes,
    "dequantize": dequantize_kernel,
}
KERNELS = {**_BASE_KERNELS, **_RNN_KERNELS, **_ATTN_KERNELS, **_NORM_KERNELS, **QUANT_KERNELS}

NP_DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "u32": np.uint32,
    "bool": np.bool_,
}


def as_array(v: View) -> np.ndarray:
    """The NumPy view a strided View describes (no copy)."""
    base = v.buf.handle
    item = base.itemsize
    return np.lib.stride_tricks.as_strided(
        base[v.offset :],
        shape=v.shape,
        strides=tuple(s * item for s in v.strides),
        writeable=False,
    )


class ReferenceBackend(OneInstance):
    name = "reference"
    type = "cpu"  # torch's name for it: `x.device.type == "cpu"`, `str(x.device) == "cpu"`

    def __str__(self) -> str:
        return self.type

    def __init__(self):
        self.live_bytes = 0
        self.peak_bytes = 0
        self.allocs = 0  # allocations made (a refused run must make none)
        self.host_times: list | None = None  # (op, seconds) while a profile collects them

    def supports(self, dtype: DType) -> bool:
        return dtype.name in NP_DTYPES

    def alloc(self, numel: int, dtype: DType) -> Buffer:
        arr = np.empty(max(numel, 1), dtype=NP_DTYPES[dtype.name])
        self.allocs += 1
        self.live_bytes += arr.nbytes
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        return Buffer(self, arr, numel, dtype)

    def release(self, buf: Buffer) -> None:
        self.live_bytes -= buf.handle.nbytes
        buf.handle = None

    def upload(self, buf: Buffer, data: bytes) -> None:
        arr = np.frombuffer(data, dtype=buf.handle.dtype)
        if arr.size != buf.numel:
            raise DeviceError(f"upload of {arr.size} elements into a buffer of {buf.numel}")
        buf.handle[: buf.numel] = arr

    async def read(self, buf: Buffer, start: int = 0, count: int | None = None) -> bytes:
        stop = buf.numel if count is None else start + count
        return buf.handle[start:stop].tobytes()

    def run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None:
        if self.host_times is None:
            return self._run(op, inputs, outputs, attrs)
        t0 = time.perf_counter()  # a profile collects each op's time
        self._run(op, inputs, outputs, attrs)
        self.host_times.append((op, time.perf_counter() - t0))

    def _run(self, op: str, inputs: list[View], outputs: list[View], attrs: dict) -> None:
        kernel = KERNELS.get(op)
        if kernel is None:
            raise DeviceError(f"the reference backend has no kernel for {op!r}")
        arrays = [as_array(v) for v in inputs]
        if getattr(kernel, "reads_targets", False):  # in place: the targets' current values
            arrays += [as_array(o) for o in outputs]
        out_dtypes = [NP_DTYPES[o.dtype.name] for o in outputs]
        results = kernel(arrays, attrs, out_dtypes)
        if not isinstance(results, (list, tuple)):
            results = [results]
        for o, r in zip(outputs, results):
            r = np.asarray(r)
            if r.shape != o.shape:
                r = np.broadcast_to(r, o.shape)
            n = int(np.prod(o.shape, dtype=np.int64))
            o.buf.handle[o.offset : o.offset + n] = r.astype(out_dtypes[0], copy=False).reshape(-1)

    # -- memory accounting, the same names every backend reports --
    def memory(self) -> dict:
        return {
            "live_bytes": self.live_bytes,
            "peak_bytes": self.peak_bytes,
            "allocs": self.allocs,
        }

    def reset_peak(self) -> None:
        self.peak_bytes = self.live_bytes

    # -- host arrays: the one place a tensor's values become a NumPy array --
    @staticmethod
    def host_array(data: bytes, shape, dtype: DType) -> np.ndarray:
        """A writable NumPy array (its own copy) of ``data`` in ``dtype``'s host layout."""
        return np.frombuffer(data, dtype=NP_DTYPES[dtype.name]).reshape(tuple(shape)).copy()
