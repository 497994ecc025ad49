"""Host tensors of imported files (codecs layer): dtype code, shape and little-endian bytes.

A ``RawTensor`` is what every codec reads and writes: no device, no NumPy. Dtype codes
are safetensors' (``F32``, ``BF16``, ``I64``...). ``widen`` turns one into bytes of a
Scellis dtype: bf16 becomes f32 exactly (WGSL has no bf16), integers become i32 when
every value fits (otherwise the import is refused, never wrapped).
"""

from __future__ import annotations

import array
import struct
import sys
from dataclasses import dataclass

from ..base.errors import ScellisError
from ..base.files import read_file

# code -> (bytes per element, struct format)
ITEMSIZE = {
    "F64": (8, "d"),
    "F32": (4, "f"),
    "F16": (2, "e"),
    "BF16": (2, "H"),
    "I64": (8, "q"),
    "I32": (4, "i"),
    "I16": (2, "h"),
    "I8": (1, "b"),
    "U8": (1, "B"),
    "U16": (2, "H"),
    "U32": (4, "I"),
    "U64": (8, "Q"),
    "BOOL": (1, "?"),
}
# the Scellis dtype each code lands in
SCELLIS = {
    "F64": "f64",
    "F32": "f32",
    "F16": "f16",
    "BF16": "f32",
    "I64": "i32",
    "I32": "i32",
    "I16": "i32",
    "I8": "i32",
    "U8": "i32",
    "U16": "i32",
    "U32": "u32",
    "U64": "i32",
    "BOOL": "bool",
}
# and back: a Scellis dtype's code when exported
CODE_OF = {"f64": "F64", "f32": "F32", "f16": "F16", "i32": "I32", "u32": "U32", "bool": "BOOL"}


def numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


@dataclass(frozen=True)
class RawTensor:
    """One tensor read from or written to a file; ``data`` is C-order little-endian."""

    dtype: str
    shape: tuple
    data: bytes

    def __post_init__(self):
        if self.dtype not in ITEMSIZE:
            raise ScellisError(f"unsupported tensor dtype {self.dtype!r}")
        want = numel(self.shape) * ITEMSIZE[self.dtype][0]
        if len(self.data) != want:
            raise ScellisError(
                f"a {self.dtype} tensor of shape {list(self.shape)} needs {want} bytes, "
                f"got {len(self.data)}"
            )

    @property
    def numel(self) -> int:
        return numel(self.shape)

    def values(self) -> list:
        """The elements as Python numbers, flat (bf16 as floats)."""
        if self.dtype == "BF16":
            return list(array_of("F32", bf16_to_f32(self.data)))
        return list(array_of(self.dtype, self.data))


class FileTensor(RawTensor):
    """A tensor whose bytes stay in their file until ``data`` is read, and are read from
    it again at each read: an import holds a checkpoint's names and shapes and the
    bytes of one tensor at a time, never the whole model (a 1B-parameter folder is
    gigabytes; in a tab, the worker's address space is 4 GiB)."""

    def __init__(self, dtype: str, shape: tuple, path, begin: int, end: int):
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "shape", tuple(shape))
        object.__setattr__(self, "_span", (path, begin, end))
        if dtype not in ITEMSIZE:
            raise ScellisError(f"unsupported tensor dtype {dtype!r}")
        if numel(self.shape) * ITEMSIZE[dtype][0] != end - begin:
            raise ScellisError(f"{path}: a {dtype}{list(self.shape)} tensor cannot span "
                               f"{end - begin} bytes")  # fmt: skip

    @property
    def data(self) -> bytes:
        path, begin, end = self._span
        got = read_file(path, offset=begin, head=end - begin)
        if len(got) != end - begin:
            raise ScellisError(f"{path}: the file was cut short while it was imported")
        return got

    def __repr__(self) -> str:
        path, begin, end = self._span
        return f"FileTensor({self.dtype}, {list(self.shape)}, {path}[{begin}:{end}])"


def array_of(code: str, data: bytes):
    """A flat view of ``data`` as Python numbers of dtype ``code`` (little-endian host order)."""
    fmt = ITEMSIZE[code][1]
    if fmt in "e?":
        return struct.unpack(f"<{len(data) // ITEMSIZE[code][0]}{fmt}", data)
    a = array.array(fmt)
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def bf16_to_f32(data: bytes) -> bytes:
    """bf16 is the top half of an f32: widening is exact (two zero bytes below)."""
    halves = memoryview(data).cast("B")
    out = bytearray(len(data) * 2)
    out[2::4] = halves[0::2]
    out[3::4] = halves[1::2]
    return bytes(out)


def f32_to_bf16(data: bytes) -> bytes:
    """Round-to-nearest-even f32 -> bf16 (NaN stays NaN), as torch's .bfloat16() does."""
    words = array_of("U32", data)
    out = array.array("H")
    for w in words:
        if (w & 0x7F800000) == 0x7F800000 and (w & 0x007FFFFF):
            out.append((w >> 16) | 0x0040)
            continue
        w += 0x7FFF + ((w >> 16) & 1)
        out.append((w >> 16) & 0xFFFF)
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def widen(t: RawTensor) -> tuple[str, bytes]:
    """(Scellis dtype name, bytes in it) for ``t``; refuses integers that do not fit i32."""
    target = SCELLIS[t.dtype]
    if t.dtype == "BF16":
        return target, bf16_to_f32(t.data)
    if t.dtype in ("I64", "I16", "I8", "U8", "U16", "U64"):
        vals = array_of(t.dtype, t.data)
        if vals and (min(vals) < -(2**31) or max(vals) >= 2**31):
            raise ScellisError(
                f"an {t.dtype} tensor holds values outside i32's range; Scellis keeps ints as i32"
            )
        out = array.array("i", vals)
        if sys.byteorder != "little":
            out.byteswap()
        return target, out.tobytes()
    return target, t.data


def from_values(code: str, shape, values) -> RawTensor:
    """A RawTensor of dtype ``code`` holding ``values`` (flat, C order)."""
    fmt = ITEMSIZE[code][1]
    if code == "BF16":
        return RawTensor(code, tuple(shape), f32_to_bf16(from_values("F32", shape, values).data))
    if fmt in "e?":
        return RawTensor(code, tuple(shape), struct.pack(f"<{len(values)}{fmt}", *values))
    a = array.array(fmt, values)
    if sys.byteorder != "little":
        a.byteswap()
    return RawTensor(code, tuple(shape), a.tobytes())
