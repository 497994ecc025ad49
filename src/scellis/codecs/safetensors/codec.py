"""safetensors weights (codecs layer): the store's pure-Python reader/writer as a codec.

Reading keeps every dtype the format has (bf16 stays bf16 here; ``raw.widen`` turns it
into f32 when the weights meet a model). A file Scellis wrote carries its record's SML
text in the ``scellis.record`` metadata entry, so an export opens back as the same model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import file_size, read_file, write_file
from ...catalog.registry import field, register
from ...sml import parse
from ...store.safetensors import MAX_HEADER, dumps, header_size, index, layout, loads
from ..base import Codec, Imported
from ..raw import FileTensor, RawTensor
from ..record import record_text

RECORD_KEY = "scellis.record"


@dataclass(frozen=True)
class SafetensorsConfig:
    """safetensors weight files (.safetensors): a JSON header, then raw tensor bytes."""

    max_bytes: int = field(16 << 30, doc="refuse files larger than this", min=1)


class SafetensorsCodec(Codec):
    suffixes = (".safetensors",)
    can_write = True

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        # 8-byte little-endian header length, then the JSON object's "{"
        return len(head) > 8 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 1

    def read(self, path: Path) -> Imported:
        """The file's tensors, their bytes left in it until read (``FileTensor``)."""
        size = file_size(path)
        if size > self.config.max_bytes:
            raise ScellisError(f"{path}: {size} bytes is over the {self.config.max_bytes} cap")
        try:
            tensors, meta = file_tensors(path, size)
        except ScellisError as e:
            raise ScellisError(f"{path}: {e}") from None
        return _imported(tensors, meta, str(path))

    def loads(self, data: bytes, where: str) -> Imported:
        """The tensors (and the record, when Scellis wrote it) of safetensors bytes."""
        try:
            views, meta = loads(data)
        except ScellisError as e:
            raise ScellisError(f"{where}: {e}") from None
        tensors = {k: RawTensor(d, tuple(s), bytes(v)) for k, (d, s, v) in views.items()}
        return _imported(tensors, meta, where)

    def dumps(self, tensors: dict[str, RawTensor], record: dict | None) -> bytes:
        meta = {RECORD_KEY: record_text(record)} if record else None
        return dumps({k: (t.dtype, tuple(t.shape), t.data) for k, t in tensors.items()}, meta)

    def parts(self, tensors: dict[str, RawTensor], record: dict | None):
        """The bytes ``dumps`` makes, as its header then one tensor at a time (each read
        only when its turn comes: a streamed write holds one tensor)."""
        meta = {RECORD_KEY: record_text(record)} if record else None
        prefix, order = layout({k: (t.dtype, t.shape) for k, t in tensors.items()}, meta)
        yield prefix
        for name in order:
            yield tensors[name].data

    def write(self, path: Path, tensors: dict[str, RawTensor], record: dict | None) -> list[Path]:
        body = self.dumps(tensors, record)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, body)
        return [path]


def _imported(tensors: dict[str, RawTensor], meta: dict, where: str) -> Imported:
    """The tensors with the record Scellis wrote in the metadata, when it is there."""
    meta = dict(meta or {})
    record = None
    if RECORD_KEY in meta:
        record = parse(meta.pop(RECORD_KEY), f"{where}:{RECORD_KEY}").data
    return Imported(tensors, record, meta)


def file_tensors(path: Path, size: int | None = None) -> tuple[dict[str, FileTensor], dict]:
    """The tensors of the safetensors file at ``path`` (of ``size`` bytes) and its
    metadata, read from its header alone: each tensor's bytes stay in the file until
    read (``FileTensor``)."""
    size = file_size(path) if size is None else size
    first = read_file(path, head=8)
    head = read_file(path, head=min(header_size(first), MAX_HEADER + 8, size))
    spans, meta = index(head, size)
    tensors = {k: FileTensor(d, s, path, begin, end) for k, (d, s, begin, end) in spans.items()}
    return tensors, meta


register("codec/safetensors", "codec", SafetensorsConfig, SafetensorsCodec, builtin=True)
