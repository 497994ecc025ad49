"""Reference backend (devices layer): buffers are 1-D NumPy arrays; kernels in a table."""

from __future__ import annotations

import math
import time

import numpy as np

from ...base.dtypes import DType
from ...base.errors import DeviceError
from ..base import Buffer, OneInstance, View
from .attention import KERNELS as _ATTN_KERNELS
from .kernels import KERNELS as _BASE_KERNELS
from .norm import KERNELS as _NORM_KERNELS
from .quant import dequantize_kernel, qmatmul, quant_absmax, quant_codes, widen_f16
from .recurrent import KERNELS as _RNN_KERNELS
from .unfold import KERNELS as _UNFOLD_KERNELS

QUANT_KERNELS = {
    "qmatmul": qmatmul,
    "quant_absmax": quant_absmax,
    "quant_codes": quant_codes,
    "dequantize": dequantize_kernel,
    "widen_f16": widen_f16,
}
KERNELS = {
    **_BASE_KERNELS,
    **_RNN_KERNELS,
    **_ATTN_KERNELS,
    **_NORM_KERNELS,
    **_UNFOLD_KERNELS,
    **QUANT_KERNELS,
}
# the kernels ``run_new`` may serve: those that read no target's current value
_FRESH_KERNELS = {op: k for op, k in KERNELS.items() if not getattr(k, "reads_targets", False)}

NP_DTYPES = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "u32": np.uint32,
    "bool": np.bool_,
}


def as_array(v: View) -> np.ndarray:
    """The read-only NumPy view a strided View describes (no copy)."""
    return _window(v.buf.handle, v.shape, v.strides, v.offset)


def _window(base: np.ndarray, shape, strides, offset: int) -> np.ndarray:
    """The read-only strided window of ``base`` (in elements), without a copy.

    ``np.ndarray`` over the buffer is the cheapest way to make it (a tenth of
    ``as_strided``'s time, which every op pays once per input), and it checks that the
    window lies inside the buffer."""
    item = base.itemsize
    try:
        arr = np.ndarray(shape, base.dtype, base, offset * item, [s * item for s in strides])
    except ValueError:
        if 0 not in shape:
            raise
        # an empty view may sit past its buffer's end (a slice of nothing at an offset):
        # no element is read, so any empty array of the shape serves
        arr = np.empty(shape, base.dtype)
    arr.flags.writeable = False
    return arr


def _write(o: View, r, dtype, taken: set) -> None:
    """Store a kernel's result ``r`` into the contiguous output ``o``, cast to ``dtype``
    (the op's first output's) and then to ``o``'s.

    A result that fills the whole buffer, in its dtype, in memory of its own that no one
    else holds (``taken``: the results this op already stored) becomes the buffer's
    storage instead of being copied into it; the backend alone holds its handles, and
    replacing every value at once is what a write of the whole buffer does."""
    r = np.asarray(r)
    handle = o.buf.handle
    if (
        r.shape == o.shape
        and r.dtype == handle.dtype
        and r.size == handle.size
        and r.flags.owndata
        and r.flags.c_contiguous
        and r.flags.writeable
        and id(r) not in taken
        and dtype == handle.dtype
    ):
        taken.add(id(r))
        o.buf.handle = r.reshape(-1)
        return
    if r.shape != o.shape:
        r = np.broadcast_to(r, o.shape)
    target = handle[o.offset : o.offset + math.prod(o.shape)]
    if dtype != target.dtype:  # every result goes through the first output's dtype
        r = r.astype(dtype)
    if r.ndim == 1 or not o.shape:  # no reshape needed: assign straight into the target
        target[...] = r
    else:
        target.reshape(o.shape)[...] = r  # a contiguous target: a view, never a copy


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

    def run_new(self, op: str, inputs, attrs: dict, shape: tuple, numel: int, dtype: DType):
        """``run`` for the runtime's usual case, one fresh contiguous output: the result
        in a new buffer, or None where ``run`` must serve it (an in-place kernel, an
        empty result, a ``run`` replaced on this instance by a test's spy). A profile
        collects its time as ``run``'s. ``inputs`` are anything with ``_buf``,
        ``shape``, ``strides`` and ``offset`` (the runtime's tensors): no View is built
        for them or for the output, and a result that owns its memory becomes the
        buffer as it is, not copied into one allocated first. The kernel and what it
        reads are ``run``'s, so the values are bitwise the same. Every eager op of a
        step comes through here, so it is written for few Python calls."""
        kernel = _FRESH_KERNELS.get(op)
        if kernel is None or not numel or "run" in self.__dict__:
            return None
        t0 = None if self.host_times is None else time.perf_counter()
        np_dtype = NP_DTYPES[dtype.name]
        r = kernel([_window(t._buf.handle, t.shape, t.strides, t.offset) for t in inputs],
                   attrs, [np_dtype])  # fmt: skip
        if type(r) is not np.ndarray:
            if isinstance(r, (list, tuple)):
                (r,) = r
            r = np.asarray(r)
        flags = r.flags
        if (
            r.dtype == np_dtype
            and flags.owndata
            and flags.c_contiguous
            and flags.writeable
            and r.shape == shape
        ):
            handle = r.reshape(-1)
        else:
            handle = np.empty(numel, dtype=np_dtype)
            if r.shape != shape:
                r = np.broadcast_to(r, shape)
            handle.reshape(shape)[...] = r  # cast on assignment, as ``_write`` does
        if t0 is not None:
            self.host_times.append((op, time.perf_counter() - t0))
        self.allocs += 1
        live = self.live_bytes = self.live_bytes + handle.nbytes
        if live > self.peak_bytes:
            self.peak_bytes = live
        return Buffer(self, handle, numel, dtype)

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
        taken: set = set()
        for o, r in zip(outputs, results):
            _write(o, r, out_dtypes[0], taken)

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
