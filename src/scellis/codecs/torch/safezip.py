"""Checked zip reading (codecs layer): the archive layer of PyTorch's ``.pt`` files.

``zipfile`` trusts a lot of what an archive says about itself. Before any member is
used this module refuses: archives over a size cap, member names that are absolute or
climb with ``..``, duplicate names, members whose declared ranges leave the file,
members that inflate more than 200:1, members whose inflated size or CRC-32 differs
from what the directory claims (checked on the bytes actually read, so a lying header
cannot smuggle extra data in), encrypted members, and any layout other than the one
``torch.save`` writes: local entries back to back from the first byte, then the central
directory, then its end records to the last byte. So a junk prefix, two archives
joined, or bytes hidden between members (places where zip readers disagree about which
archive they read) are refused, never guessed.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from ...base.errors import ScellisError

DEFAULT_CAP = 4 << 30  # 4 GiB: archives (and their inflated members) above this are refused
# a deflated member may inflate at most this many times (past a small size): torch.save
# stores members, so only a re-zipped archive is deflated, and a few kilobytes must not
# become gigabytes even under the cap
_RATIO = 200
_SMALL = 1 << 20


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
        if not data.startswith(b"PK\x03\x04"):
            raise ScellisError(f"{where}: not a zip archive (it does not start with a member)")
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
            infos = zf.infolist()
        except Exception as e:  # zipfile raises many types on damaged directories
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
            if info.flag_bits & 0x41:
                raise ScellisError(f"{where}: member {info.filename!r} is encrypted")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise ScellisError(
                    f"{where}: member {info.filename!r} uses compression {info.compress_type}; "
                    "only stored and deflated members are read"
                )
            if info.file_size > max(_SMALL, _RATIO * info.compress_size):
                raise ScellisError(
                    f"{where}: member {info.filename!r} inflates {info.compress_size} bytes to "
                    f"{info.file_size} (over {_RATIO}:1: a zip bomb; torch.save stores members)"
                )
            if info.header_offset + info.compress_size > len(data):
                raise ScellisError(f"{where}: member {info.filename!r} points past the archive")
            total += info.file_size
            if total > cap:
                raise ScellisError(f"{where}: the members inflate past the {cap}-byte cap")
        _layout(data, zf.start_dir, infos, where)
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
        except Exception as e:  # zipfile raises many types on damaged members
            raise ScellisError(f"{self.where}: member {name!r} is damaged ({e})") from None
        if len(data) != info.file_size:
            raise ScellisError(
                f"{self.where}: member {name!r} holds {len(data)} bytes, "
                f"its header says {info.file_size}"
            )
        if zlib.crc32(data) != info.CRC:
            raise ScellisError(f"{self.where}: member {name!r} fails its CRC-32 check")
        return data


_LOCAL = struct.Struct("<4s5H3L2H")
_EOCD = struct.Struct("<4s4H2LH")
_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")


def _layout(data: bytes, start_dir: int, infos, where: str) -> None:
    """Refuse any byte of ``data`` that is not part of the archive zipfile read: members
    must tile the file from offset 0 up to the central directory, and the directory's
    end records must run to the last byte."""
    pos = 0
    order = sorted(infos, key=lambda i: i.header_offset)
    for k, info in enumerate(order):
        if info.header_offset != pos:
            raise ScellisError(
                f"{where}: member {info.filename!r} does not start where the bytes before it "
                "end (a prefix, archives joined, or bytes that belong to no member)"
            )
        head = data[pos : pos + _LOCAL.size]
        if len(head) < _LOCAL.size or head[:4] != b"PK\x03\x04":
            raise ScellisError(f"{where}: member {info.filename!r} has no local header")
        *_, nlen, elen = _LOCAL.unpack(head)
        pos += _LOCAL.size + nlen + elen + info.compress_size
        if info.flag_bits & 0x08:  # a data descriptor follows: its size depends on zip64
            nxt = order[k + 1].header_offset if k + 1 < len(order) else start_dir
            skip = 4 if data[pos : pos + 4] == b"PK\x07\x08" else 0
            fits = [n for n in (12, 20) if pos + skip + n == nxt]
            if not fits:
                raise ScellisError(
                    f"{where}: member {info.filename!r} is followed by bytes that belong to "
                    "no member"
                )
            pos += skip + fits[0]
    if pos != start_dir:
        raise ScellisError(
            f"{where}: {start_dir - pos} bytes between the last member and the directory "
            "belong to no member"
        )
    i = data.rfind(b"PK\x05\x06")
    if i < 0 or i + _EOCD.size > len(data):
        raise ScellisError(f"{where}: the archive has no end record")
    *_, size_cd, offset_cd, comment = _EOCD.unpack_from(data, i)
    end_cd = i
    if i >= _LOCATOR.size and data[i - _LOCATOR.size : i - _LOCATOR.size + 4] == b"PK\x06\x07":
        _, _, at, _ = _LOCATOR.unpack_from(data, i - _LOCATOR.size)
        if at + _EOCD64.size > len(data) or data[at : at + 4] != b"PK\x06\x06":
            raise ScellisError(f"{where}: the archive's zip64 end record is missing")
        rec = _EOCD64.unpack_from(data, at)
        if at + 12 + rec[1] != i - _LOCATOR.size:
            raise ScellisError(f"{where}: stray bytes around the archive's zip64 end record")
        size_cd, offset_cd, end_cd = rec[8], rec[9], at
    if offset_cd != start_dir or start_dir + size_cd != end_cd:
        raise ScellisError(f"{where}: the central directory is not where the archive says")
    if i + _EOCD.size + comment != len(data):
        raise ScellisError(
            f"{where}: {len(data) - i - _EOCD.size - comment} bytes follow the archive"
        )
