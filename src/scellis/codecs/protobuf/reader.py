"""A protocol-buffers wire-format reader (codecs layer): just enough to walk ONNX files.

Schema-free: ``fields`` yields (field number, wire type, value) where a varint or a
fixed-width value is an int and a length-delimited one is a memoryview of its bytes.
The message types that read ONNX build on it in ``codecs.onnx.proto``. Every length is
checked against the buffer, so a truncated or hostile file is an error, never a read
past the end. Groups (wire types 3 and 4, unused by ONNX) are refused.
"""

from __future__ import annotations

import struct

from ...base.errors import ScellisError

VARINT, I64, LEN, I32 = 0, 1, 2, 5


class WireError(ScellisError):
    """Bytes that are not a valid protocol-buffers message."""


def varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    out, shift = 0, 0
    n = len(buf)
    while True:
        if pos >= n:
            raise WireError("protobuf: a varint runs past the end of the data")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7
        if shift > 63:
            raise WireError("protobuf: a varint longer than 10 bytes")


def fields(buf):
    """(field number, wire type, value) for every field of one message, in order."""
    if isinstance(buf, int):
        raise WireError("protobuf: a number where a message was expected")
    buf = memoryview(buf)
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = varint(buf, pos)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise WireError("protobuf: field number 0")
        if wt == VARINT:
            v, pos = varint(buf, pos)
        elif wt == I64:
            if pos + 8 > n:
                raise WireError("protobuf: a fixed64 runs past the end")
            v = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wt == I32:
            if pos + 4 > n:
                raise WireError("protobuf: a fixed32 runs past the end")
            v = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        elif wt == LEN:
            size, pos = varint(buf, pos)
            if pos + size > n:
                raise WireError(f"protobuf: field {num} claims {size} bytes, past the end")
            v = buf[pos : pos + size]
            pos += size
        else:
            raise WireError(f"protobuf: unsupported wire type {wt} (field {num})")
        yield num, wt, v


def signed64(v: int) -> int:
    """An int64 field's value: varints carry negatives as 64-bit two's complement."""
    return v - (1 << 64) if v >= 1 << 63 else v


def packed_varints(v, wt: int) -> list[int]:
    """A repeated integer field's values, packed (LEN) or one (VARINT)."""
    if wt == VARINT:
        return [signed64(v)]
    if wt != LEN:
        raise WireError("protobuf: an integer field with a fixed-width wire type")
    out, pos = [], 0
    while pos < len(v):
        x, pos = varint(v, pos)
        out.append(signed64(x))
    return out


def packed_fixed(v, wt: int, fmt: str) -> list:
    """A repeated float/double field's values, packed (LEN) or one fixed-width value."""
    size = struct.calcsize(fmt)
    if wt not in (LEN, I32 if size == 4 else I64):
        raise WireError("protobuf: a fixed-width field with the wrong wire type")
    if wt == LEN:
        if len(v) % size:
            raise WireError("protobuf: a packed fixed-width field of a ragged length")
        return list(struct.unpack(f"<{len(v) // size}{fmt}", v))
    return [struct.unpack(f"<{fmt}", v.to_bytes(size, "little"))[0]]


def num(v) -> int:
    """A scalar integer field's value (refusing a length-delimited one in its place)."""
    if not isinstance(v, int):
        raise WireError("protobuf: a message where a number was expected")
    return v


def blob(v) -> bytes:
    """A bytes field's value (refusing a number in its place)."""
    if isinstance(v, int):
        raise WireError("protobuf: a number where bytes were expected")
    return bytes(v)


def text(v) -> str:
    if isinstance(v, int):
        raise WireError("protobuf: a number where a string was expected")
    try:
        return bytes(v).decode("utf-8")
    except UnicodeDecodeError:
        raise WireError("protobuf: a string field that is not UTF-8") from None
