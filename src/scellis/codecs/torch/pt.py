"""PyTorch ``.pt`` / ``.pth`` state dicts (codecs layer): read without torch, write for torch.

Reading: the zip archive ``torch.save`` writes (checked by ``SafeZip``), whose
``data.pkl`` goes through the restricted unpickler and whose ``data/<key>`` members are
the storages. Nested dicts flatten to dotted names (``{"model": {"fc.weight": t}}`` ->
``model.fc.weight``); non-tensor leaves (an epoch, a name) land in the metadata. The
legacy (pre-1.6, non-zip) format is refused.

Writing emits the same archive layout with a pickle of only the globals the reader
allows, so ``torch.load(..., weights_only=True)`` reads it back.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import output_file
from ...catalog.registry import field, register
from ..base import Codec, Imported
from ..raw import RawTensor
from .safezip import DEFAULT_CAP, SafeZip
from .unpickle import RestrictedUnpickler, View, brief

_PKL_CAP = 256 << 20  # data.pkl holds structure only; 256 MiB of it is already absurd


@dataclass(frozen=True)
class TorchConfig:
    """PyTorch state dict archives (.pt, .pth) written by torch.save."""

    max_bytes: int = field(DEFAULT_CAP, doc="refuse archives larger than this", min=1)


_MAX_DEPTH = 64  # nesting of dicts/lists around the tensors
MAX_NAMES = 1 << 17  # tensors and metadata entries a state dict may name
MAX_NODES = 1 << 18  # values a walk of the state dict may visit, references included
# Copying a view out takes one Python step per row: a transposed matrix has a row per
# column, but a tiny view of shape (n, n, 1) over one stride-0 element would have n*n.
MAX_ROWS = 1 << 21
# A view copied out may be larger than its storage only by being expanded (stride 0) or
# named again (tied weights): the tensors may take a few times the archive, never more.
# So a 600-byte file cannot ask for gigabytes under the size cap.
_GROWTH, _SLACK = 4, 64 << 20


class _Walk:
    """Flattens what the pickle built, counting as it goes: every reference to a value is
    visited (a memo reference is as big as what it names), so names, nodes and the bytes
    the tensors will take are bounded before anything is copied."""

    def __init__(self, where: str, max_bytes: int, archive_bytes: int):
        self.where = where
        self.max_bytes = min(max_bytes, _GROWTH * archive_bytes + _SLACK)
        self.tensors: dict[str, View] = {}
        self.meta: dict = {}
        self.nodes = self.nbytes = self.rows = 0

    def _visit(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ScellisError(
                f"{self.where}: the state dict expands past {MAX_NODES} values "
                "(shared references count each time they are named)"
            )

    def _name(self, key) -> str:
        if type(key) is str:
            return key
        if type(key) is int and abs(key) < 1 << 63:
            return str(key)
        raise ScellisError(f"{self.where}: a dict key of type {type(key).__name__} ({brief(key)})")

    def _add(self, table: dict, name: str, value) -> None:
        if len(self.tensors) + len(self.meta) >= MAX_NAMES:
            raise ScellisError(f"{self.where}: the state dict names more than {MAX_NAMES} values")
        table[name] = value

    def walk(self, obj, prefix: str = "", depth: int = 0) -> None:
        self._visit()
        if depth > _MAX_DEPTH:
            raise ScellisError(
                f"{self.where}: the state dict nests deeper than {_MAX_DEPTH} levels"
            )
        if isinstance(obj, View):
            if not prefix:
                raise ScellisError(
                    f"{self.where}: the file holds one bare tensor, not a state dict"
                )
            self.nbytes += obj.nbytes
            if self.nbytes > self.max_bytes:
                raise ScellisError(
                    f"{self.where}: the tensors would take more memory than the size cap "
                    f"allows ({self.max_bytes} bytes, from a file of this size)"
                )
            self.rows += obj.rows
            if self.rows > MAX_ROWS:
                raise ScellisError(
                    f"{self.where}: the tensors' strides scatter them over more than "
                    f"{MAX_ROWS} pieces; save them contiguous (tensor.contiguous())"
                )
            self._add(self.tensors, prefix, obj)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                k = self._name(k)
                self.walk(v, f"{prefix}.{k}" if prefix else k, depth + 1)
        elif isinstance(obj, (list, tuple)) and any(isinstance(v, (View, dict)) for v in obj):
            for i, v in enumerate(obj):
                self.walk(v, f"{prefix}.{i}" if prefix else str(i), depth + 1)
        else:
            self._add(self.meta, prefix or "value", self._plain(obj, depth))

    def _plain(self, obj, depth: int):
        """A fresh copy of a metadata value (numbers, text, lists of them), counted."""
        if depth > _MAX_DEPTH:
            raise ScellisError(
                f"{self.where}: the state dict nests deeper than {_MAX_DEPTH} levels"
            )
        if obj is None or type(obj) in (bool, float, str):
            return obj
        if type(obj) is int:
            if abs(obj) >= 1 << 64:
                raise ScellisError(f"{self.where}: a number in the state dict is over 64 bits")
            return obj
        if isinstance(obj, (list, tuple)):
            out = []
            for v in obj:
                self._visit()
                out.append(self._plain(v, depth + 1))
            return out if isinstance(obj, list) else tuple(out)
        raise ScellisError(f"{self.where}: unexpected {type(obj).__name__} in the state dict")


class TorchCodec(Codec):
    suffixes = (".pt", ".pth", ".bin", ".ckpt")
    can_write = True

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        # a zip archive, or a bare pickle (the legacy format, recognised to refuse it clearly)
        return head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"

    def read(self, path: Path) -> Imported:
        obj, walk = self._unpickled(path)
        walk.walk(obj)
        tensors = {k: v.materialise() for k, v in walk.tensors.items()}
        return Imported(tensors, None, walk.meta)

    def read_tree(self, path: Path):
        """What ``torch.save`` saved, its nesting kept (``torch.load``'s answer): dicts,
        lists and tuples as they were, each tensor a ``RawTensor``; a bare tensor too.
        The same bounds as ``read`` (names, values, bytes) hold before any copy."""
        obj, walk = self._unpickled(path)
        if isinstance(obj, View):
            walk.walk({"tensor": obj})
            return obj.materialise()
        walk.walk(obj)
        return _rebuilt(obj)

    def _unpickled(self, path: Path):
        where = str(path)
        data = self.read_bytes(path)
        if data[:1] == b"\x80":  # a bare pickle: what torch.save wrote before 1.6
            raise ScellisError(
                f"{where}: the legacy (non-zip) torch format is not read; re-save it with a "
                "current torch.save"
            )
        z = SafeZip(data, where, self.config.max_bytes)
        pkls = [n for n in z.names() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pkls) != 1:
            raise ScellisError(f"{where}: expected one <name>/data.pkl member, found {len(pkls)}")
        root = pkls[0][: -len("data.pkl")]
        order = root + "byteorder"
        if order in z.names() and z.read(order).strip() not in (b"little", b""):
            raise ScellisError(f"{where}: big-endian archives are not read")
        if z.size(pkls[0]) > _PKL_CAP:
            raise ScellisError(f"{where}: data.pkl is over {_PKL_CAP} bytes")

        def storage(key: str) -> bytes:
            if not key or "/" in key or key in (".", ".."):
                raise ScellisError(f"{where}: storage key {brief(key)} is not a plain name")
            return z.read(f"{root}data/{key}")

        pkl = z.read(pkls[0])
        obj = RestrictedUnpickler(pkl, storage, where).run()
        return obj, _Walk(where, self.config.max_bytes, len(data))

    def write(self, path: Path, tensors: dict[str, RawTensor], record: dict | None) -> list[Path]:
        path.parent.mkdir(parents=True, exist_ok=True)
        root = path.stem or "archive"
        with output_file(path) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr(f"{root}/data.pkl", _pickle(tensors))
            zf.writestr(f"{root}/byteorder", "little")
            for i, t in enumerate(tensors.values()):
                zf.writestr(f"{root}/data/{i}", t.data)
            zf.writestr(f"{root}/version", "3\n")
        return [path]


def _rebuilt(obj):
    """``obj`` (walked already, so bounded) with every tensor view copied out."""
    if isinstance(obj, View):
        return obj.materialise()
    if isinstance(obj, dict):
        return {k: _rebuilt(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_rebuilt(v) for v in obj) if type(obj) in (list, tuple) else list(obj)
    return obj


# -- writing: a protocol-2 pickle by hand, naming only allowed globals --------------------

_STORAGE_OF = {
    "F64": "DoubleStorage",
    "F32": "FloatStorage",
    "F16": "HalfStorage",
    "BF16": "BFloat16Storage",
    "I64": "LongStorage",
    "I32": "IntStorage",
    "I16": "ShortStorage",
    "I8": "CharStorage",
    "U8": "ByteStorage",
    "BOOL": "BoolStorage",
}


def _pickle(tensors: dict[str, RawTensor]) -> bytes:
    """The data.pkl of an OrderedDict state dict over storages ``0``, ``1``, ..."""
    out = io.BytesIO()
    w = out.write
    w(b"\x80\x02")
    w(b"ccollections\nOrderedDict\n)R")  # OrderedDict() on the stack
    if tensors:
        w(b"(")  # MARK for SETITEMS
    for i, (name, t) in enumerate(tensors.items()):
        _unicode(w, name)
        w(b"ctorch._utils\n_rebuild_tensor_v2\n(")
        w(b"(")
        _unicode(w, "storage")
        w(f"ctorch\n{_STORAGE_OF[t.dtype]}\n".encode())
        _unicode(w, str(i))
        _unicode(w, "cpu")
        _int(w, t.numel)
        w(b"tQ")  # TUPLE, BINPERSID
        _int(w, 0)
        strides, acc = [], 1
        for s in reversed(t.shape):
            strides.append(acc)
            acc *= s
        _tuple(w, list(t.shape))
        _tuple(w, list(reversed(strides)))
        w(b"\x89")  # requires_grad False
        w(b"ccollections\nOrderedDict\n)R")
        w(b"tR")
    if tensors:
        w(b"u")  # SETITEMS
    w(b".")
    return out.getvalue()


def _unicode(w, s: str) -> None:
    b = s.encode("utf-8")
    w(b"X" + len(b).to_bytes(4, "little") + b)


def _int(w, n: int) -> None:
    if 0 <= n < 256:
        w(b"K" + bytes([n]))
    elif -(2**31) <= n < 2**31:
        w(b"J" + n.to_bytes(4, "little", signed=True))
    else:
        b = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
        w(b"\x8a" + bytes([len(b)]) + b)


def _tuple(w, items: list) -> None:
    w(b"(")
    for v in items:
        _int(w, v)
    w(b"t")


register("codec/torch", "codec", TorchConfig, TorchCodec, builtin=True)
