"""A protocol-buffers wire-format writer (codecs layer): the mirror of ``reader``.

Messages are built as bytes, field by field: ``varint_field``, ``bytes_field`` (strings,
bytes and nested messages), ``fixed32_float`` and packed repeated ints. Enough for the
ONNX exporter; no schema, no reflection.
"""

from __future__ import annotations

import struct

from .reader import I32, LEN, VARINT


def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int64 negatives: 10-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(num: int, wt: int) -> bytes:
    return varint(num << 3 | wt)


def varint_field(num: int, n: int) -> bytes:
    return _key(num, VARINT) + varint(n)


def bytes_field(num: int, data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _key(num, LEN) + varint(len(data)) + data


def float_field(num: int, x: float) -> bytes:
    return _key(num, I32) + struct.pack("<f", x)


def packed_ints(num: int, values) -> bytes:
    return bytes_field(num, b"".join(varint(v) for v in values))
