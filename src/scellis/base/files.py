"""Reading and writing a user's file (base layer): regular files only, with an optional
size cap on reads.

A path a user names may be a FIFO (reading it blocks until a writer comes, maybe
never), a device (``/dev/zero`` never ends), a socket or a folder. Every read of a
user's file goes through ``read_file``: it opens without blocking, refuses anything
but a regular file, and refuses a file over ``limit`` bytes before reading it. Writes
go through ``write_file``, for the same reasons (writing into a FIFO blocks too).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import ScellisError, shown

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_file(path, *, limit: int | None = None, head: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (only its first ``head`` bytes when
    given); a ScellisError naming the path when it cannot be read, is not a regular
    file, or holds more than ``limit`` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ScellisError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a file")
            raise ScellisError(f"{path}: cannot read: it is {kind}, not a regular file")
        if limit is not None and st.st_size > limit:
            raise ScellisError(f"{path}: {st.st_size} bytes is over the {limit} cap")
        want = st.st_size if head is None else min(head, st.st_size)
        chunks, got = [], 0
        while got < want:
            chunk = os.read(fd, min(want - got, 1 << 24))
            if not chunk:
                break  # the file shrank meanwhile: what is there
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    except OSError as e:
        raise ScellisError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_output(path) -> os.stat_result | None:
    """Refuse an output ``path`` that is empty or is something other than a regular file
    (before any work is done for it); its stat when it exists."""
    if not str(path):
        raise ScellisError("cannot write: the output path is empty")
    try:
        st = os.stat(path)
    except OSError:
        return None  # a new file
    if not stat.S_ISREG(st.st_mode):
        kind = next((k for test, k in _KINDS if test(st.st_mode)), "not a file")
        raise ScellisError(f"{path}: cannot write: it is {kind}, not a regular file")
    return st


def write_file(path, data: bytes) -> None:
    """``data`` as the file at ``path``, whole or not at all: written beside it, then
    renamed over it. A ScellisError naming the path when it is empty, is something other
    than a regular file, or cannot be written."""
    st = check_output(path)
    dest = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st else 0o666 & ~_umask())  # not mkstemp's 0600
        os.replace(tmp, dest)
    except OSError as e:
        _remove(tmp)
        raise ScellisError(f"{path}: cannot write ({e.strerror or e})") from None
    except BaseException:  # Ctrl-C or a kill mid-write: no half file left beside it
        _remove(tmp)
        raise


def _remove(tmp) -> None:
    if tmp is not None and os.path.exists(tmp):
        os.unlink(tmp)


def is_within(path, folder) -> bool:
    """Whether ``path``, with every symlink followed, lies within ``folder`` (followed
    too): the test before reading a file that someone else's folder or record names."""
    try:
        real, root = Path(path).resolve(), Path(folder).resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False
    return real == root or root in real.parents


def inside(folder, name, where: str) -> Path:
    """The path of ``name`` (a relative path a file in ``folder`` gave, or a file name
    we look for there) resolved, when it stays inside ``folder``; a ScellisError naming
    ``where`` when it is absolute, climbs out with ``..``, or leads out through a
    symbolic link. A link that stays inside is followed; one that leads out is refused
    even where it is benign (a hub cache's snapshot links its files to blobs beside it:
    copy them in), and the message never says where it leads or what is there."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise ScellisError(
            f"{where}: a file path must be a non-empty string, not {shown(repr(name), 40)}"
        )
    rel = Path(name.replace("\\", "/"))
    if len(name) > 4096 or any(len(part.encode("utf-8", "replace")) > 255 for part in rel.parts):
        raise ScellisError(f"{where}: {shown(name)} is too long to be a file path")
    if rel.is_absolute() or ".." in rel.parts or name.startswith("\\"):
        raise ScellisError(f"{where}: {shown(name)} lies outside the model's folder")
    root = Path(folder).resolve()
    try:
        target = (root / rel).resolve()
    except (OSError, RuntimeError):  # a link loop
        raise ScellisError(f"{where}: {shown(name)} is a link that cannot be resolved") from None
    if not is_within(target, root):
        raise ScellisError(
            f"{where}: {shown(name)} leads outside the model's folder (a link out is not "
            "followed: copy the file in)"
        )
    return target
