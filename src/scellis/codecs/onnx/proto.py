"""ONNX messages (codecs layer): ModelProto, GraphProto, NodeProto, TensorProto, attributes.

Only the fields an importer needs are read (field numbers from onnx.proto3); others are
skipped. Initializer payloads become RawTensors: ``raw_data`` or the typed repeated
fields, or external data read from a file beside the model, refused when its path is
absolute or resolves outside the model's folder, when it is not a regular file, when the
range it names is not inside the file or not the tensor's size, or when its SHA-1
checksum (the ``checksum`` entry) differs.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from ...base.errors import ScellisError, shown
from ..protobuf.reader import LEN, blob, fields, num, packed_fixed, packed_varints, signed64, text
from ..raw import ITEMSIZE, RawTensor, from_values, numel

# TensorProto.DataType -> dtype code
DTYPES = {
    1: "F32", 2: "U8", 3: "I8", 4: "U16", 5: "I16", 6: "I32", 7: "I64", 9: "BOOL",
    10: "F16", 11: "F64", 12: "U32", 13: "U64", 16: "BF16",
}  # fmt: skip


@dataclass
class Node:
    op: str
    inputs: list[str]
    outputs: list[str]
    name: str = ""
    domain: str = ""
    attrs: dict = field(default_factory=dict)

    def label(self) -> str:
        name = self.name or (self.outputs[0] if self.outputs else "?")
        return f"{shown(self.op)} (node {shown(name)})"


@dataclass
class ValueInfo:
    name: str
    dtype: str | None = None
    dims: list = field(default_factory=list)  # int, or str for a symbolic dim


@dataclass
class Graph:
    name: str = ""
    nodes: list[Node] = field(default_factory=list)
    initializers: dict[str, RawTensor] = field(default_factory=dict)
    inputs: list[ValueInfo] = field(default_factory=list)
    outputs: list[ValueInfo] = field(default_factory=list)


@dataclass
class Model:
    ir_version: int = 0
    producer: str = ""
    opsets: dict = field(default_factory=dict)  # domain -> version
    graph: Graph = field(default_factory=Graph)


# Bytes of values a model may keep in TensorProto's typed repeated fields (float_data,
# int64_data...) rather than raw_data. They decode one Python value at a time (a 20 MB
# field of int64_data took over a minute and 450 MB); exporters put weights in
# raw_data and keep the typed fields for small constants (shapes, axes, scalars).
MAX_TYPED_BYTES = 2 << 20


class _Ctx:
    def __init__(self, folder: Path | None, where: str):
        self.folder, self.where = folder, where
        self.typed = 0  # bytes of typed-field values read so far
        # the byte ranges of each external file that tensors have read so far
        self.claimed: dict[Path, list[tuple[int, int]]] = {}

    def claim(self, target: Path, begin: int, end: int, loc: str, name: str) -> None:
        """Refuse a tensor whose external bytes overlap another's: exporters give each
        tensor its own range, and a small model naming one large file over and over
        would otherwise read it once per name (gigabytes from a kilobyte)."""
        if begin == end:
            return
        spans = self.claimed.setdefault(target, [])
        i = bisect.bisect(spans, (begin, end))
        if (i > 0 and spans[i - 1][1] > begin) or (i < len(spans) and spans[i][0] < end):
            raise ScellisError(
                f"{self.where}: tensor {name!r} reads bytes of {loc!r} that another tensor "
                "reads too"
            )
        spans.insert(i, (begin, end))


def _count(entries: dict, key: str, ctx: _Ctx, name: str) -> int | None:
    text = entries.get(key)
    if text is None or text == "":
        return None
    if not (text.isascii() and text.isdigit() and len(text) <= 20):
        raise ScellisError(
            f"{ctx.where}: tensor {name!r} has external data {key} {text!r:.40} "
            "(a whole number of bytes)"
        )
    return int(text)


def _external(entries: dict, ctx: _Ctx, name: str, nbytes: int) -> bytes:
    """The ``nbytes`` bytes of a tensor kept in a file beside the model: a regular file
    inside the model's folder, the range inside the file, its SHA-1 when one is given."""
    loc = entries.get("location", "")
    if ctx.folder is None:
        raise ScellisError(f"{ctx.where}: tensor {name!r} has external data but no folder")
    rel = Path(loc)
    base = ctx.folder.resolve()
    target = (base / rel).resolve()
    if (
        not loc
        or "\x00" in loc
        or rel.is_absolute()
        or (target != base and base not in target.parents)
    ):
        raise ScellisError(
            f"{ctx.where}: tensor {name!r} keeps its data at {loc!r}, outside the model's folder"
        )
    offset = _count(entries, "offset", ctx, name) or 0
    length = _count(entries, "length", ctx, name)
    if length is not None and length != nbytes:
        raise ScellisError(
            f"{ctx.where}: tensor {name!r} needs {nbytes} bytes, its external data says {length}"
        )
    try:
        # O_NONBLOCK: a FIFO or a device named as data must not hang the open
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise ScellisError(f"{ctx.where}: external data {loc!r}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ScellisError(f"{ctx.where}: external data {loc!r} is not a regular file")
        end = offset + nbytes
        if end > st.st_size or (length is None and end != st.st_size):
            raise ScellisError(
                f"{ctx.where}: external data {loc!r} holds {st.st_size} bytes; tensor {name!r} "
                f"needs bytes {offset}..{end}"
            )
        ctx.claim(target, offset, end, loc, name)
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], nbytes
        while left:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise ScellisError(f"{ctx.where}: external data {loc!r}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) != nbytes:
        raise ScellisError(f"{ctx.where}: external data {loc!r} is shorter than declared")
    want = entries.get("checksum")
    if want and hashlib.sha1(data).hexdigest() != want.strip().lower():
        raise ScellisError(
            f"{ctx.where}: external data of tensor {name!r} fails its SHA-1 checksum"
        )
    return data


def _typed_budget(ctx: _Ctx, v, name: str) -> None:
    """Count a typed field's bytes before they are decoded (see ``MAX_TYPED_BYTES``). An
    unpacked value is a field of its own, which costs a step of the field loop too."""
    ctx.typed += len(v) if isinstance(v, memoryview | bytes) else 32
    if ctx.typed > MAX_TYPED_BYTES:
        raise ScellisError(
            f"{ctx.where}: {shown(name)!r} and the tensors and attributes before it keep over "
            f"{MAX_TYPED_BYTES} bytes of values outside raw_data; export weights as raw_data"
        )


def tensor(buf, ctx: _Ctx) -> tuple[str, RawTensor]:
    dims, dtype, name, raw = [], 0, "", None
    typed: dict[int, list] = {}
    external, location = {}, 0
    for fno, wt, v in fields(buf):
        if fno in (1, 4, 5, 7, 10, 11):  # dims and the typed values
            _typed_budget(ctx, v, name)
        if fno == 1:
            dims.extend(packed_varints(v, wt))
        elif fno == 2:
            dtype = num(v)
        elif fno == 8:
            name = text(v)
        elif fno == 9:
            raw = blob(v)
        elif fno == 4:
            typed.setdefault(4, []).extend(packed_fixed(v, wt, "f"))
        elif fno == 10:
            typed.setdefault(10, []).extend(packed_fixed(v, wt, "d"))
        elif fno in (5, 7, 11):
            typed.setdefault(fno, []).extend(packed_varints(v, wt))
        elif fno == 13:
            kv = {}
            for n2, _, v2 in fields(v):
                kv[n2] = text(v2)
            external[kv.get(1, "")] = kv.get(2, "")
        elif fno == 14:
            location = num(v)
    code = DTYPES.get(dtype)
    if code is None:
        raise ScellisError(f"{ctx.where}: tensor {name!r} has unsupported ONNX data type {dtype}")
    if any(d < 0 for d in dims):
        raise ScellisError(f"{ctx.where}: tensor {name!r} has a negative dimension")
    shape = tuple(dims)
    if location == 1:
        raw = _external(external, ctx, name, numel(shape) * ITEMSIZE[code][0])
    if raw is not None:
        return name, RawTensor(code, shape, raw)
    vals = next(iter(typed.values()), [])
    if code in ("F16", "BF16"):  # 16-bit floats travel as their bit patterns in int32_data
        data = struct.pack(f"<{len(vals)}H", *[v & 0xFFFF for v in vals])
        return name, RawTensor(code, shape, data)
    if code == "U64":
        vals = [v & ((1 << 64) - 1) for v in vals]
    if code == "BOOL":
        vals = [bool(v) for v in vals]
    return name, from_values(code, shape, vals)


def attribute(buf, ctx: _Ctx) -> tuple[str, object]:
    name, atype = "", 0
    got: dict[int, list] = {}
    for fno, wt, v in fields(buf):
        if fno == 1:
            name = text(v)
        elif fno == 20:
            atype = num(v)
        elif fno == 2:
            got[2] = packed_fixed(v, wt, "f")
        elif fno == 3:
            got[3] = [signed64(num(v))]
        elif fno == 4:
            got[4] = [blob(v)]
        elif fno == 5:
            got[5] = [tensor(v, ctx)[1]]
        elif fno == 6:
            got[6] = [v]  # a subgraph: kept as bytes; no supported op takes one
        elif fno == 7:
            _typed_budget(ctx, v, name)
            got.setdefault(7, []).extend(packed_fixed(v, wt, "f"))
        elif fno == 8:
            _typed_budget(ctx, v, name)
            got.setdefault(8, []).extend(packed_varints(v, wt))
        elif fno == 9:
            got.setdefault(9, []).append(blob(v))
    single = {1: 2, 2: 3, 3: 4, 4: 5, 5: 6}
    if atype in single:
        vals = got.get(single[atype], [None])
        v = vals[0]
        return name, (v.decode("utf-8", "replace") if isinstance(v, bytes) else v)
    if atype == 6:
        return name, got.get(7, [])
    if atype == 7:
        return name, got.get(8, [])
    if atype == 8:
        return name, [s.decode("utf-8", "replace") for s in got.get(9, [])]
    return name, None


def node(buf, ctx: _Ctx) -> Node:
    n = Node("", [], [])
    for fno, wt, v in fields(buf):
        if fno == 1:
            n.inputs.append(text(v))
        elif fno == 2:
            n.outputs.append(text(v))
        elif fno == 3:
            n.name = text(v)
        elif fno == 4:
            n.op = text(v)
        elif fno == 7:
            n.domain = text(v)
        elif fno == 5 and wt == LEN:
            k, val = attribute(v, ctx)
            n.attrs[k] = val
    return n


def value_info(buf) -> ValueInfo:
    vi = ValueInfo("")
    for fno, _, v in fields(buf):
        if fno == 1:
            vi.name = text(v)
        elif fno == 2:
            for n2, _, tt in fields(v):
                if n2 != 1:  # only tensor types
                    continue
                for n3, _, v3 in fields(tt):
                    if n3 == 1:
                        vi.dtype = DTYPES.get(num(v3))
                    elif n3 == 2:
                        for n4, _, dim in fields(v3):
                            if n4 != 1:
                                continue
                            d: object = "?"
                            for n5, _, v5 in fields(dim):
                                if n5 == 1:
                                    d = signed64(num(v5))
                                elif n5 == 2:
                                    d = text(v5)
                            vi.dims.append(d)
    return vi


def graph(buf, ctx: _Ctx) -> Graph:
    g = Graph()
    for fno, _, v in fields(buf):
        if fno == 1:
            g.nodes.append(node(v, ctx))
        elif fno == 2:
            g.name = text(v)
        elif fno == 5:
            name, t = tensor(v, ctx)
            if name in g.initializers:
                raise ScellisError(f"{ctx.where}: initializer {name!r} appears twice")
            g.initializers[name] = t
        elif fno == 11:
            g.inputs.append(value_info(v))
        elif fno == 12:
            g.outputs.append(value_info(v))
        elif fno == 15:
            raise ScellisError(f"{ctx.where}: sparse initializers are not supported")
    return g


def model(data: bytes, folder: Path | None = None, where: str = "<onnx>") -> Model:
    """Decode a ModelProto; ``folder`` is where external data may live (the model's)."""
    ctx = _Ctx(folder, where)
    m = Model()
    found = False
    for fno, _, v in fields(data):
        if fno == 1:
            m.ir_version = num(v)
        elif fno == 2:
            m.producer = text(v)
        elif fno == 7:
            m.graph = graph(v, ctx)
            found = True
        elif fno == 8:
            dom, ver = "", 0
            for n2, _, v2 in fields(v):
                if n2 == 1:
                    dom = text(v2)
                elif n2 == 2:
                    ver = num(v2)
            m.opsets[dom] = ver
    if not found:
        raise ScellisError(f"{where}: not an ONNX model (no graph)")
    return m


assert all(c in ITEMSIZE for c in DTYPES.values())
