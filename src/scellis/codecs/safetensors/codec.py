"""safetensors weights (codecs layer): the store's pure-Python reader/writer as a codec.

Reading keeps every dtype the format has (bf16 stays bf16 here; ``raw.widen`` turns it
into f32 when the weights meet a model). A file Scellis wrote carries its record's SML
text in the ``scellis.record`` metadata entry, so an export opens back as the same model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import write_file
from ...catalog.registry import field, register
from ...sml import parse
from ...store.safetensors import dumps, layout, loads
from ..base import Codec, Imported
from ..raw import RawTensor
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
        data = self.read_bytes(path)
        return self.loads(data, str(path))

    def loads(self, data: bytes, where: str) -> Imported:
        """The tensors (and the record, when Scellis wrote it) of safetensors bytes."""
        try:
            views, meta = loads(data)
        except ScellisError as e:
            raise ScellisError(f"{where}: {e}") from None
        tensors = {k: RawTensor(d, tuple(s), bytes(v)) for k, (d, s, v) in views.items()}
        meta = dict(meta or {})
        record = None
        if RECORD_KEY in meta:
            record = parse(meta.pop(RECORD_KEY), f"{where}:{RECORD_KEY}").data
        return Imported(tensors, record, meta)

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


register("codec/safetensors", "codec", SafetensorsConfig, SafetensorsCodec, builtin=True)
