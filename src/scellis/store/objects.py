"""The content-addressed object store (store layer): immutable blobs named by their sha256.

Layout: ``ROOT/objects/sha256/ab/cdef...`` (the first two hex digits name the folder).
An object becomes visible only by ``rename`` of a complete, fsynced temp file in the
same folder (then the folder is fsynced), so a crash at any point leaves either the
whole object or no object: temp files are named ``.tmp-*`` and are never read as
objects. Every ``get`` re-hashes what it read; a missing or corrupt object is an error
naming the hash. A corrupt object is moved aside, whole, to
``ROOT/quarantine/sha256/<hash>.<time>`` (for inspection; never read as an object), and
the error names where; later reads still say it is corrupt. ``put`` never overwrites a
good object: storing bytes that are already there verifies the stored copy, and where
the stored copy is corrupt (or was moved aside) the new bytes, which hash to the name by
construction, are written fresh in its place: re-importing a bundle or re-saving the same
checkpoint repairs the store.

Writing goes through a ``writer`` (``write(fd, data)``), the seam tests use to fail
mid-object; a full disk (ENOSPC) becomes a ``StoreFullError``, with the temp file gone.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
from pathlib import Path

from ..base.errors import ScellisError


class StoreError(ScellisError):
    """A store object that is missing, corrupt or cannot be written."""


class ObjectMissing(StoreError):
    """No object has this hash."""


class StoreFullError(StoreError):
    """The disk under the store is full; nothing partial was left visible."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Writer:
    """Writes all of ``data`` to a file descriptor (the default; tests inject failing ones)."""

    def write(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return  # hosts without directory handles (some browser file systems) cannot sync them
    try:
        os.fsync(fd)
    except OSError:
        pass  # likewise: a directory fsync the file system does not support
    finally:
        os.close(fd)


CHUNK = 1 << 20  # bytes hashed at a time when an object is checked in place


def _abandon(fd: int | None, tmp: Path | None) -> None:
    """Close and remove a temporary file that will not become an object."""
    if fd is not None:
        os.close(fd)
    if tmp is not None:
        tmp.unlink(missing_ok=True)


def _is_hex(h: str) -> bool:
    return len(h) == 64 and all(c in "0123456789abcdef" for c in h)


class ObjectStore:
    def __init__(self, root: str | os.PathLike, writer: Writer | None = None):
        self.root = Path(root)
        self.base = self.root / "objects" / "sha256"
        self.writer = writer or Writer()

    def path(self, h: str) -> Path:
        if not _is_hex(h):
            raise StoreError(f"{h!r} is not a sha256 object id (64 lowercase hex digits)")
        return self.base / h[:2] / h[2:]

    def has(self, h: str) -> bool:
        return self.path(h).is_file()

    def put(self, data: bytes) -> str:
        """Store ``data`` (if not already there) and return its sha256 hex."""
        data = bytes(data)
        h = sha256(data)
        final = self.path(h)
        if final.exists():
            # re-used: check it is whole, and make it fresh for the collector. A corrupt
            # copy is moved aside by get() and these bytes (verified: they hash to h)
            # replace it below; one that could not be moved aside is an error
            try:
                self.get(h)
                os.utime(final)
                return h
            except (ObjectMissing, FileNotFoundError):
                pass  # collected meanwhile: write it again below
            except StoreError:
                if final.exists():
                    raise
        folder = final.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise self._error(e, h) from None
        tmp = folder / f".tmp-{os.getpid()}-{time.monotonic_ns()}-{h[2:10]}"
        fd = None
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            self.writer.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            fd = None
            os.replace(tmp, final)
        except OSError as e:
            if fd is not None:
                os.close(fd)
            tmp.unlink(missing_ok=True)
            raise self._error(e, h) from None
        except BaseException:
            if fd is not None:
                os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(folder)
        return h

    def put_parts(self, parts) -> str:
        """Store the bytes of ``parts`` (an iterable of bytes, taken one at a time: the
        whole object is never in memory) and return their sha256 hex. They are hashed as
        they go to a temporary file, which is then renamed to the hash's name (over a copy
        already there: the same bytes, now verified)."""
        folder = self.base / "incoming"
        digest, fd, tmp = hashlib.sha256(), None, None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".tmp-{os.getpid()}-{time.monotonic_ns()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            for part in parts:
                digest.update(part)
                self.writer.write(fd, part)
            os.fsync(fd)
            os.close(fd)
            fd = None
            h = digest.hexdigest()
            final = self.path(h)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
        except OSError as e:
            _abandon(fd, tmp)
            raise self._error(e, digest.hexdigest()) from None
        except BaseException:
            _abandon(fd, tmp)
            raise
        _fsync_dir(final.parent)
        return h

    def _error(self, e: OSError, h: str) -> StoreError:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return StoreFullError(
                f"the disk under {self.root} is full: object {h[:12]} was not written "
                "(nothing partial is left; free space and resume)"
            )
        return StoreError(f"cannot write object {h[:12]} under {self.root}: {e.strerror or e}")

    def get(self, h: str) -> bytes:
        """The bytes of object ``h``, verified against the hash."""
        p = self.path(h)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise self._missing(h) from None
        except OSError as e:
            raise StoreError(f"object {h} cannot be read: {e.strerror or e}") from None
        got = sha256(data)
        if got != h:
            self._corrupt(h, p, got)
        return data

    def checked_path(self, h: str) -> Path:
        """The file of object ``h``, its bytes verified against the hash a chunk at a time
        (for a reader that then takes only parts of it: a model's weights tensor by
        tensor)."""
        p = self.path(h)
        digest = hashlib.sha256()
        try:
            with open(p, "rb", buffering=0) as f:
                chunk = memoryview(bytearray(CHUNK))
                while n := f.readinto(chunk):
                    digest.update(chunk[:n])
        except FileNotFoundError:
            raise self._missing(h) from None
        except OSError as e:
            raise StoreError(f"object {h} cannot be read: {e.strerror or e}") from None
        got = digest.hexdigest()
        if got != h:
            self._corrupt(h, p, got)
        return p

    def _missing(self, h: str) -> StoreError:
        """Why object ``h`` has no file: moved aside as corrupt, or never there."""
        aside = self.quarantined(h)
        if aside:
            return StoreError(
                f"object {h} is corrupt (moved aside to {aside[-1]}); storing the same "
                "content again replaces it"
            )
        return ObjectMissing(f"object {h} is missing from {self.root}")

    def _corrupt(self, h: str, p: Path, got: str) -> None:
        """Move object ``h``'s file, whose bytes hash to ``got``, aside, and say so."""
        try:
            where = f"moved aside to {self._quarantine(h, p)}"
        except FileNotFoundError:  # another reader moved it aside first
            where = f"moved aside to {(self.quarantined(h) or ['quarantine/'])[-1]}"
        except OSError as e:
            where = f"left in place: it could not be moved aside ({e.strerror or e})"
        raise StoreError(
            f"object {h} is corrupt (its bytes hash to {got}); {where}; storing the "
            "same content again replaces it"
        )

    def _quarantine(self, h: str, p: Path) -> Path:
        folder = self.root / "quarantine" / "sha256"
        folder.mkdir(parents=True, exist_ok=True)
        dest = folder / f"{h}.{time.time_ns()}"
        os.replace(p, dest)
        _fsync_dir(p.parent)
        return dest

    def quarantined(self, h: str) -> list[Path]:
        """The copies of object ``h`` moved aside as corrupt, oldest first."""
        folder = self.root / "quarantine" / "sha256"
        if not _is_hex(h) or not folder.is_dir():
            return []
        return sorted(folder.glob(f"{h}.*"), key=lambda q: int(q.suffix[1:] or 0))

    def list(self) -> list[tuple[str, float]]:
        """Every visible object as (hash, modification time); temp files are not objects."""
        out = []
        if not self.base.is_dir():
            return out
        for folder in sorted(self.base.iterdir()):
            if len(folder.name) != 2 or not folder.is_dir():
                continue
            for f in sorted(folder.iterdir()):
                h = folder.name + f.name
                if _is_hex(h):
                    out.append((h, f.stat().st_mtime))
        return out

    def temp_files(self) -> list[Path]:
        if not self.base.is_dir():
            return []
        return sorted(self.base.glob("*/.tmp-*"))

    def delete(self, h: str) -> None:
        """Remove an object (garbage collection only: objects are otherwise immutable)."""
        self.path(h).unlink(missing_ok=True)
