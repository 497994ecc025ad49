"""Checked zip reading (codecs layer): the archive layer of PyTorch's ``.pt`` files.

``zipfile`` trusts a lot of what an archive says about itself. Before any member is
used this module refuses: archives over a size cap, member names that are absolute or
climb with ``..``, duplicate names, members whose declared ranges leave the file, and
members whose inflated size or CRC-32 differs from what the directory claims (checked
on the bytes actually read, so a lying header cannot smuggle extra data in).
"""

from __future__ import annotations

import io
import zipfile
import zlib

from ...base.errors import ScellisError

DEFAULT_CAP = 4 << 30  # 4 GiB: archives (and their inflated members) above this are refused


def _bad_name(name: str) -> str | None:
    if not name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        return "a '..' component"
    if "\x00" in name:
        return "a NUL byte"
    return None


class SafeZip:
    """A zip archive held in memory whose every member was checked before use."""

    def __init__(self, data: bytes, where: str, cap: int = DEFAULT_CAP):
        self.where = where
        if len(data) > cap:
            raise ScellisError(f"{where}: the archive is {len(data)} bytes, over the {cap} cap")
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
            infos = zf.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as e:
            raise ScellisError(f"{where}: not a readable zip archive ({e})") from None
        seen: set[str] = set()
        total = 0
        for info in infos:
            why = _bad_name(info.filename)
            if why:
                raise ScellisError(f"{where}: member {info.filename!r} has {why}")
            if info.filename in seen:
                raise ScellisError(f"{where}: member {info.filename!r} appears twice")
            seen.add(info.filename)
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ScellisError(
                    f"{where}: member {info.filename!r} uses compression {info.compress_type}; "
                    "only stored and deflated members are read"
                )
            if info.header_offset + info.compress_size > len(data):
                raise ScellisError(f"{where}: member {info.filename!r} points past the archive")
            total += info.file_size
            if total > cap:
                raise ScellisError(f"{where}: the members inflate past the {cap}-byte cap")
        self._zf = zf
        self._infos = {i.filename: i for i in infos}
        self._cap = cap

    def names(self) -> list[str]:
        return list(self._infos)

    def size(self, name: str) -> int:
        return self._infos[name].file_size

    def read(self, name: str) -> bytes:
        """The member's bytes, after checking its size and CRC-32 against the directory."""
        info = self._infos.get(name)
        if info is None:
            raise ScellisError(f"{self.where}: the archive has no member {name!r}")
        try:
            with self._zf.open(info) as f:
                # one byte more than declared: a member that inflates further is caught
                data = f.read(info.file_size + 1) if info.file_size < self._cap else b""
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError) as e:
            raise ScellisError(f"{self.where}: member {name!r} is damaged ({e})") from None
        if len(data) != info.file_size:
            raise ScellisError(
                f"{self.where}: member {name!r} holds {len(data)} bytes, "
                f"its header says {info.file_size}"
            )
        if zlib.crc32(data) != info.CRC:
            raise ScellisError(f"{self.where}: member {name!r} fails its CRC-32 check")
        return data
