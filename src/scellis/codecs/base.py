"""Codec entries (codecs layer): the base a format implements and how a file finds its codec.

A codec is a catalog entry of kind ``codec`` (``register(id, "codec", Config, Impl)``),
the same public path blocks take; a user's codec registers the same way from an
extension file. ``Impl(config)`` reads files into an ``Imported`` (tensors, and a model
record when the format carries the architecture) and may write them back. A file finds
its codec by magic bytes first (``sniff``; a folder by ``sniff_dir``), then by suffix,
so a ``.pt`` that is really something else is never handed to the wrong reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import ScellisError
from ..base.files import read_file
from ..catalog.registry import entries, lookup
from .raw import RawTensor

HEAD_BYTES = 64  # what sniff() sees of a file


@dataclass
class Imported:
    """What a codec read: tensors by name, a record (dict) or None, and free metadata."""

    tensors: dict[str, RawTensor]
    record: dict | None = None
    metadata: dict = field(default_factory=dict)
    codec: str = ""


class Codec:
    """Base of a codec implementation; subclasses set the class attributes they use."""

    suffixes: tuple[str, ...] = ()  # lower-case, with the dot: (".pt", ".pth")
    can_read = True
    can_write = False
    writes_folder = False  # a writer that makes a folder of files, not one file
    folder_files: tuple[str, ...] = ()  # the files it writes there (checked before work)

    def __init__(self, config):
        self.config = config

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        """True when the first bytes of a file are this format's (False: not recognised)."""
        return False

    @classmethod
    def sniff_dir(cls, path: Path) -> bool:
        """True when the folder ``path`` is this format's (a format stored as a folder)."""
        return False

    def read(self, path: Path) -> Imported:
        raise ScellisError(f"{type(self).__name__} cannot read files")

    def read_bytes(self, path: Path) -> bytes:
        """The file's bytes, refused (a ScellisError) over the codec's ``max_bytes`` cap
        or when it cannot be read."""
        return read_file(path, limit=self.config.max_bytes)

    def write(self, path: Path, tensors: dict[str, RawTensor], record: dict | None) -> list[Path]:
        """Write ``tensors`` (and the record, when the format has a place for it); the paths.
        An export calls it on a staging path (``base.files.StagedOutput``) that is moved
        into place once complete."""
        raise ScellisError(f"{type(self).__name__} cannot write files")


def make(entry_id: str, **fields) -> Codec:
    """The codec of catalog id ``entry_id`` with its Config from ``fields``."""
    e = lookup(entry_id, "codec")
    return e.impl(e.config(**fields))


def _head(path: Path) -> bytes:
    return read_file(path, head=HEAD_BYTES)


def find(path: str | Path, *, writing: bool = False) -> str:
    """The codec id for ``path``: sniffed from its bytes when reading, else by suffix."""
    path = Path(path)
    pool = [e for e in entries("codec") if (e.impl.can_write if writing else e.impl.can_read)]
    if not writing and path.is_dir():
        for e in pool:
            sniff_dir = getattr(e.impl, "sniff_dir", None)
            if sniff_dir is not None and sniff_dir(path):
                return e.id
        raise ScellisError(
            f"{path}: a folder no codec reads (a Hugging Face model has config.json, a "
            "TF.js model model.json)"
        )
    if not writing:
        head = _head(path)
        for e in pool:
            if e.impl.sniff(head):
                return e.id
    suffix = path.suffix.lower()
    for e in pool:
        if suffix in e.impl.suffixes:
            return e.id
    known = sorted({s for e in pool for s in e.impl.suffixes})
    what = "write" if writing else "read"
    raise ScellisError(
        f"{path}: no codec can {what} this file (known suffixes: {', '.join(known) or 'none'})"
    )


def read(path: str | Path, codec: str | None = None, **fields) -> Imported:
    """Read ``path`` with ``codec`` (an id) or the one ``find`` picks."""
    cid = codec or find(path)
    out = make(cid, **fields).read(Path(path))
    out.codec = cid
    return out
