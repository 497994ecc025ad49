"""Reading and writing a user's file (base layer): regular files only, with an optional
size cap on reads, and writes that are whole or not at all.

A path a user names may be a FIFO (reading it blocks until a writer comes, maybe
never), a device (``/dev/zero`` never ends), a socket or a folder. Every read of a
user's file goes through ``read_file``: it opens without blocking, refuses anything
but a regular file, and refuses a file over ``limit`` bytes before reading it.

Writes go through ``write_file`` / ``output_file`` (one file) or ``StagedOutput`` (a file
or a folder of files a writer makes). The rules, in one place:

- an output is checked before any work is done for it (``check_output``,
  ``check_destination``): a FIFO, a device, a socket, a folder where a file is wanted,
  or a file where a folder is wanted is refused, and so is an existing file unless the
  caller replaces on purpose (the user's ``--force``);
- a symbolic link is never written through, nor replaced: the path the user typed may
  lead through links to its last part (those are the user's own folders), but the last
  part itself, and every file or folder inside a destination folder, must be the real
  thing. A link there is refused, so an output never lands outside the folder named;
- bytes go to a temporary name in the same folder and are renamed into place, so a kill
  mid-write leaves the earlier file whole; the temporary name is removed on any error,
  Ctrl-C included. Nothing that was there before is ever deleted.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path, PurePath

from .errors import ScellisError, shown

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),  # seen by lstat only: outputs never follow one
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_file(path, *, limit: int | None = None, head: int | None = None, offset: int = 0) -> bytes:
    """The bytes of the regular file at ``path`` from ``offset`` on (only ``head`` of
    them when given); a ScellisError naming the path when it cannot be read, is not a
    regular file, or holds more than ``limit`` bytes."""
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
        rest = max(0, st.st_size - offset)
        want = rest if head is None else min(head, rest)
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
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


def file_size(path) -> int:
    """The size of the regular file at ``path``, refused as ``read_file`` refuses."""
    read_file(path, head=0)
    return os.stat(path).st_size


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _kind(mode: int) -> str:
    return next((k for test, k in _KINDS if test(mode)), "not a file")


def _lstat(path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:  # a parent that is a file, a name too long, no permission...
        raise ScellisError(f"{shown(path)}: cannot write ({e.strerror or e})") from None


def _check_path(path) -> None:
    """Refuse a path no file system call takes: empty, or with a NUL byte in it."""
    if not str(path):
        raise ScellisError("cannot write: the output path is empty")
    if "\0" in str(path):
        raise ScellisError(f"{shown(path)}: cannot write: a path has no NUL character")


def check_output(path, *, replace: bool = True) -> os.stat_result | None:
    """Refuse an output file ``path`` before any work is done for it: an empty path, a
    symbolic link, anything but a regular file, or (unless ``replace``) a file that
    exists. Its lstat when it exists."""
    _check_path(path)
    st = _lstat(path)
    if st is None:
        return None  # a new file
    if not stat.S_ISREG(st.st_mode):
        raise ScellisError(
            f"{shown(path)}: cannot write: it is {_kind(st.st_mode)}, not a regular file"
        )
    if not replace:
        raise ScellisError(f"{shown(path)} exists; pass --force to replace it")
    return st


def _check_folder(path) -> None:
    """Refuse a folder to write into that exists as anything but a real folder."""
    st = _lstat(path)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise ScellisError(
            f"{shown(path)}: cannot write into it: it is {_kind(st.st_mode)}, not a folder"
        )


def check_entry(folder, name, *, replace: bool) -> None:
    """Refuse writing the file ``name`` (a relative path) inside ``folder``: each folder
    on the way must be a real folder (not a link out of it), the file a new or (with
    ``replace``) an existing regular file."""
    rel = PurePath(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise ScellisError(f"{shown(name)}: not a name inside {shown(folder)}")
    at = Path(folder)
    for part in rel.parts[:-1]:
        at = at / part
        _check_folder(at)
    check_output(Path(folder) / rel, replace=replace)


def check_destination(path, *, replace: bool, folder: bool = False, names=(), folders=()) -> None:
    """Refuse an output before any work is done for it: a file (``folder`` False, as
    ``check_output``) or a folder that must be a real folder when it exists, with the
    files ``names`` inside it checked as ``check_entry`` does and the subfolders
    ``folders`` as real folders."""
    _check_path(path)
    if not folder:
        check_output(path, replace=replace)
        return
    _check_folder(path)
    if os.path.isdir(path):
        for name in names:
            check_entry(path, name, replace=replace)
        for name in folders:
            check_entry(path, PurePath(name, "-"), replace=True)  # the folders on its way


def _cannot(path, e: OSError) -> ScellisError:
    return ScellisError(f"{shown(path)}: cannot write ({e.strerror or e})")


@contextmanager
def output_file(path, *, replace: bool = True):
    """A binary file object to write ``path`` through: a temporary name beside it, renamed
    over ``path`` when the block ends, removed when it raises (Ctrl-C included). Refused
    as ``check_output`` refuses, before the block runs."""
    st = check_output(path, replace=replace)
    dest = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name[:80]}.", suffix=".tmp", dir=dest.parent)
    except OSError as e:
        raise _cannot(path, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st else 0o666 & ~_umask())  # not mkstemp's 0600
        os.replace(tmp, dest)
    except OSError as e:
        raise _cannot(path, e) from None
    finally:
        if os.path.lexists(tmp):  # not renamed: an error or an interruption
            os.unlink(tmp)


def write_file(path, data: bytes, *, replace: bool = True) -> None:
    """``data`` as the file at ``path``, whole or not at all (``output_file``)."""
    with output_file(path, replace=replace) as f:
        f.write(data)


class StagedOutput:
    """What a writer makes for ``dest`` (one file, or a folder of files), built under a
    temporary folder and moved into place only when it is complete.

    ``with StagedOutput(dest, replace=...) as stage:`` the writer writes ``stage.path``
    (same name as ``dest``; under a hidden folder inside ``dest`` when that is an
    existing folder, else beside it); on a clean exit a new folder is renamed into place whole,
    and into an existing folder each file is renamed over its old self after every
    one is checked (``check_entry``), so a kill leaves each earlier file whole; on any
    error or Ctrl-C the temporary folder goes and ``dest`` is untouched. ``written``:
    the final paths."""

    def __init__(self, dest, *, replace: bool):
        self.dest, self.replace = Path(dest), replace
        self.root: Path | None = None
        self.written: list[Path] = []

    @property
    def path(self) -> Path:
        return self.root / self._name()

    def _name(self) -> str:
        name = Path(os.path.abspath(self.dest)).name  # "." and "x/.." name a real folder
        if not name:
            raise ScellisError(f"{shown(self.dest)}: cannot write there")
        return name

    def __enter__(self) -> StagedOutput:
        # inside an existing folder (the path given, and the same file system as the files
        # it replaces); else beside the new file or folder, in the folder it goes into
        real_folder = (st := _lstat(self.dest)) is not None and stat.S_ISDIR(st.st_mode)
        where = Path(os.path.abspath(self.dest))
        where = where if real_folder else where.parent
        try:
            where.mkdir(parents=True, exist_ok=True)
            prefix = f".{self._name()[:80]}."
            self.root = Path(tempfile.mkdtemp(prefix=prefix, suffix=".partial", dir=where))
        except OSError as e:
            raise _cannot(self.dest, e) from None
        return self

    def __exit__(self, kind, value, tb) -> None:
        try:
            if kind is None:
                self._move()
        except OSError as e:
            raise _cannot(self.dest, e) from None
        finally:
            shutil.rmtree(self.root, ignore_errors=True)  # ours alone: the staging folder

    def _move(self) -> None:
        staged = self.path
        st = _lstat(staged)
        if st is None:
            raise ScellisError(f"{shown(self.dest)}: the writer wrote nothing")
        if not stat.S_ISDIR(st.st_mode):
            check_output(self.dest, replace=self.replace)
            os.replace(staged, self.dest)
            self.written = [self.dest]
            return
        names = _files_under(staged)
        if _lstat(self.dest) is None:  # a new folder: in place at once, whole
            os.rename(staged, self.dest)
        else:
            _check_folder(self.dest)
            for name in names:  # every check before the first rename
                check_entry(self.dest, name, replace=self.replace)
            for name in names:
                (self.dest / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged / name, self.dest / name)
        self.written = [self.dest / name for name in names]


def _files_under(folder: Path) -> list[PurePath]:
    """The regular files under ``folder`` as relative paths; a writer's link is refused."""
    out = []
    for at, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(at) / name
            mode = os.lstat(p).st_mode
            if stat.S_ISREG(mode):
                out.append(p.relative_to(folder))
            elif not stat.S_ISDIR(mode):
                raise ScellisError(f"{shown(p.name)}: a writer made {_kind(mode)}, not a file")
    return sorted(out)


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
