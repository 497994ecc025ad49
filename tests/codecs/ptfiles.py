"""Builders of hand-made PyTorch-style archives for the codec tests (benign and hostile)."""

from __future__ import annotations

import io
import struct
import zipfile


def archive(pkl: bytes, storages: dict[str, bytes] | None = None, extra=()) -> bytes:
    """A torch.save-shaped zip: archive/data.pkl, archive/data/<key>, byteorder, version."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")
        for k, v in (storages or {}).items():
            zf.writestr(f"archive/data/{k}", v)
        for name, data in extra:
            zf.writestr(zipfile.ZipInfo(name), data)
    return buf.getvalue()


def u(s: str) -> bytes:
    """BINUNICODE of ``s``."""
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def rebuild(storage_kind: str, key: str, numel: int, offset: int, size, stride) -> bytes:
    """The opcodes of one ``_rebuild_tensor_v2`` call (leaves the tensor on the stack)."""
    tup = lambda xs: b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"
    return (
        b"ctorch._utils\n_rebuild_tensor_v2\n("
        + b"("
        + u("storage")
        + f"ctorch\n{storage_kind}\n".encode()
        + u(key)
        + u("cpu")
        + b"J"
        + struct.pack("<i", numel)
        + b"tQ"
        + b"J"
        + struct.pack("<i", offset)
        + tup(size)
        + tup(stride)
        + b"\x89ccollections\nOrderedDict\n)RtR"
    )


def state_dict_pickle(items: list[tuple[str, bytes]]) -> bytes:
    """A protocol-2 pickle of OrderedDict(name -> the tensor each opcode run builds)."""
    body = b"".join(u(k) + v for k, v in items)
    return b"\x80\x02ccollections\nOrderedDict\n)R(" + body + b"u."
