"""safetensors reader and writer in pure Python (store layer): bytes in, bytes out.

Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON (an object whose
keys are tensor names plus an optional ``__metadata__`` map of str -> str), then the
tensor bytes, contiguous, in header order. ``dumps`` reproduces the reference writer
byte for byte: tensors sorted by descending dtype rank (the Rust enum order, which is
alignment order) then by name, compact JSON with ``__metadata__`` first, the header
padded with spaces to a multiple of 8 so every tensor starts 8-byte aligned.

Two deliberate differences from the ``safetensors`` package, both on inputs where the
package has no single right answer: metadata keys are written sorted (the package
writes them in hash-map order, which changes from run to run, so content-addressed
checkpoints would not be reproducible), and an empty metadata map is written as no
map (the package writes a header that is not valid JSON for it).

``loads`` refuses what the format forbids even where the package is lenient:
duplicate names, a header that is not a JSON object, non-finite JSON constants,
offsets that leave gaps, overlap or run past the buffer, a size that disagrees with
shape x dtype, a header length over 100,000,000 bytes (checked before reading), numbers
longer than 20 digits and nesting deeper than ``base.jsontext`` allows.
"""

from __future__ import annotations

import json
import struct

from ..base.errors import ScellisError
from ..base.jsontext import load_json

MAX_HEADER = 100_000_000

# Element sizes, and the reference writer's sort rank (its Dtype enum order: the larger
# rank is written first, so wider alignments come before narrower ones).
ITEMSIZE = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "F64": 8,
    "I64": 8,
    "U64": 8,
}
_RANK = {name: i for i, name in enumerate(ITEMSIZE)}

Tensor = tuple[str, tuple[int, ...], bytes]
View = tuple[str, tuple[int, ...], memoryview]


class SafetensorsError(ScellisError):
    """A safetensors buffer or tensor set that the format does not allow."""


def _nbytes(name: str, dtype: str, shape) -> int:
    if dtype not in ITEMSIZE:
        raise SafetensorsError(f"safetensors: tensor {name!r} has unknown dtype {dtype!r}")
    n = ITEMSIZE[dtype]
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise SafetensorsError(
                f"safetensors: tensor {name!r} has a bad shape {list(shape)!r} "
                "(dims are integers >= 0)"
            )
        n *= d
    return n


def _json(obj) -> bytes:
    # serde_json's compact form: no spaces, non-ASCII kept as UTF-8, only '"', '\\' and
    # control characters escaped (Python escapes exactly those with ensure_ascii=False).
    try:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        raise SafetensorsError(f"safetensors: a name or metadata string is not UTF-8: {e}") from e


def dumps(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """Serialise ``{name: (dtype, shape, data)}`` (and string metadata) to safetensors bytes."""
    prefix, order = layout({k: (d, s) for k, (d, s, _) in tensors.items()}, metadata)
    datas = []
    for name in order:
        dtype, shape, data = tensors[name]
        data = bytes(data)
        want = _nbytes(name, dtype, tuple(shape))
        if len(data) != want:
            raise SafetensorsError(
                f"safetensors: tensor {name!r} has {len(data)} bytes but {dtype}{list(shape)} "
                f"needs {want}"
            )
        datas.append(data)
    return b"".join([prefix, *datas])


def layout(tensors: dict[str, tuple], metadata: dict[str, str] | None = None):
    """(the file's first bytes: header length and header, the tensor names in the order
    their data follows) for ``{name: (dtype, shape)}``: what a writer that streams the
    tensors' bytes after it needs."""
    entries = []
    for name, (dtype, shape) in tensors.items():
        if not isinstance(name, str):
            raise SafetensorsError(f"safetensors: tensor name {name!r} is not a string")
        if name == "__metadata__":
            raise SafetensorsError("safetensors: '__metadata__' is reserved, not a tensor name")
        shape = tuple(shape)
        entries.append((name, dtype, shape, _nbytes(name, dtype, shape)))
    entries.sort(key=lambda e: e[0])
    entries.sort(key=lambda e: _RANK[e[1]], reverse=True)  # stable: name order within a rank
    header: dict = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise SafetensorsError(
                    f"safetensors: metadata must map str to str, got {k!r}: {v!r}"
                )
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata)}
    offset = 0
    for name, dtype, shape, nbytes in entries:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + nbytes]}  # fmt: skip
        offset += nbytes
    head = _json(header)
    head += b" " * (-len(head) % 8)
    return struct.pack("<Q", len(head)) + head, [e[0] for e in entries]


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise SafetensorsError(f"safetensors: duplicate key {k!r} in the header")
        seen[k] = v
    return seen


def _header(data: memoryview) -> tuple[dict, int]:
    if len(data) < 8:
        raise SafetensorsError(f"safetensors: {len(data)} bytes is too short for a header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > MAX_HEADER:
        raise SafetensorsError(
            f"safetensors: header length {n} is over the limit of {MAX_HEADER} bytes"
        )
    if 8 + n > len(data):
        raise SafetensorsError(
            f"safetensors: header length {n} runs past the end of the {len(data)}-byte buffer"
        )
    try:
        text = bytes(data[8 : 8 + n]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise SafetensorsError(f"safetensors: the header is not UTF-8 ({e.reason})") from None
    if not text.startswith("{"):
        raise SafetensorsError("safetensors: the header is not a JSON object")
    try:  # bounded digits and nesting, no NaN: the one JSON reader of users' files
        head = load_json(text, "safetensors: the header", object_pairs_hook=_no_duplicates)
    except SafetensorsError:
        raise
    except ScellisError as e:
        raise SafetensorsError(str(e)) from None
    if not isinstance(head, dict):
        raise SafetensorsError("safetensors: the header is not a JSON object")
    return head, 8 + n


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _info(name: str, info) -> tuple[str, tuple[int, ...], int, int]:
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise SafetensorsError(
            f"safetensors: tensor {name!r} needs exactly dtype, shape and data_offsets"
        )
    dtype, shape, offs = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str):
        raise SafetensorsError(f"safetensors: tensor {name!r} has a dtype that is not a string")
    if not isinstance(shape, list) or not all(_int(d) for d in shape):
        raise SafetensorsError(f"safetensors: tensor {name!r} has a shape that is not a list")
    if not (isinstance(offs, list) and len(offs) == 2 and all(_int(o) for o in offs)):
        raise SafetensorsError(f"safetensors: tensor {name!r} needs data_offsets [begin, end]")
    begin, end = offs
    if begin < 0 or end < begin:
        raise SafetensorsError(f"safetensors: tensor {name!r} has offsets {offs} out of order")
    want = _nbytes(name, dtype, shape)
    if end - begin != want:
        raise SafetensorsError(
            f"safetensors: tensor {name!r} spans {end - begin} bytes but {dtype}{shape} "
            f"needs {want}"
        )
    return dtype, tuple(shape), begin, end


def loads(data: bytes) -> tuple[dict[str, View], dict[str, str]]:
    """Parse safetensors bytes: ``({name: (dtype, shape, memoryview)}, metadata)``.

    The views share ``data``'s memory (zero copy); names come in file order."""
    buf = memoryview(data).cast("B")
    spans, meta = index(buf, len(buf))
    return {k: (d, s, buf[b:e]) for k, (d, s, b, e) in spans.items()}, meta


def header_size(first: bytes) -> int:
    """The bytes of a safetensors file's header (its length word included), from the
    file's first 8 bytes."""
    if len(first) < 8:
        raise SafetensorsError(f"safetensors: {len(first)} bytes is too short for a header length")
    return 8 + struct.unpack("<Q", first[:8])[0]


def index(head: bytes, size: int) -> tuple[dict[str, tuple], dict[str, str]]:
    """Parse a safetensors file's header from its first bytes ``head`` (the header at
    least), for a file of ``size`` bytes: ``({name: (dtype, shape, begin, end)}, metadata)``
    with ``begin``/``end`` byte positions in the file, names in file order. The tensors'
    bytes are checked to tile the rest of the file exactly."""
    head_dict, start = _header(memoryview(head).cast("B"))
    meta = head_dict.pop("__metadata__", None)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
    ):
        raise SafetensorsError("safetensors: __metadata__ must map strings to strings")
    infos = sorted(((_info(k, v), k) for k, v in head_dict.items()), key=lambda t: t[0][2:])
    body = size - start
    pos = 0
    out: dict[str, tuple] = {}
    for (dtype, shape, begin, end), name in infos:
        if begin != pos:
            what = "overlaps the tensor before it" if begin < pos else "leaves a gap before it"
            raise SafetensorsError(f"safetensors: tensor {name!r} at offset {begin} {what}")
        if end > body:
            raise SafetensorsError(
                f"safetensors: tensor {name!r} ends at {end}, past the {body}-byte data section"
            )
        pos = end
        out[name] = (dtype, shape, start + begin, start + end)
    if pos != body:
        raise SafetensorsError(
            f"safetensors: {body - pos} bytes after the last tensor belong to no tensor"
        )
    # file order (by offset), like the reference reader's tensor_names()
    return out, dict(meta)
