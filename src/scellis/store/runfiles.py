"""A run's data files as objects (store layer): kept by hash, written back out by path.

A run trained on a file the user loaded (a CSV or text file in the tab's data panel,
or the file a record names to ``scellis train``) names it in its record by a ``source``
path, and that file lives outside the store. So the run keeps each such file as an
object and lists it in its config as ``files: {source: sha256}``; a resume elsewhere
(a reloaded tab, another window, the native CLI after the file moved or after
``scellis runs import``) writes the files back under a folder of its own and reads the
record's data from there (a source that is not a relative path inside its folder is
written under ``outside/``; ``local_sources`` says where). Only bytes and paths here:
which sources are files is the caller's business.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..base.errors import ScellisError
from ..base.files import read_file
from .objects import ObjectStore


def keep(objects: ObjectStore, paths: dict[str, Path]) -> dict[str, str]:
    """Store each file of ``{source: path}``; returns ``{source: sha256}``."""
    out = {}
    for source, path in paths.items():
        try:
            data = read_file(path)
        except ScellisError as e:
            raise ScellisError(f"cannot keep the run's data file {source}: {e}") from None
        out[source] = objects.put(data)
    return out


def stored_path(source: str, h: str) -> PurePosixPath:
    """Where the kept file of ``source`` (hash ``h``) is written under a run's folder: at
    its own path when that is relative and inside the folder (what the tab writes), else
    (a native run's ``/home/me/flow.csv`` or ``../flow.csv``) under ``outside/`` by hash
    and file name, so that a bundle can never write outside the folder it is given."""
    p = PurePosixPath(source.replace("\\", "/"))
    if not p.parts or not p.name or p.name in (".", ".."):
        raise ScellisError(
            f"the run's data file {source!r} names no file; it cannot be written back out"
        )
    if p.is_absolute() or ".." in p.parts or ":" in p.parts[0]:
        return PurePosixPath("outside", h[:16], p.name)
    return p


def materialize(objects: ObjectStore, files: dict[str, str], folder) -> Path:
    """Write ``{source: sha256}`` under ``folder`` (each at its ``stored_path``) and
    return the folder: the base directory to read the record's data from (a source that
    is not relative is read from ``local_sources``). A file already there with the right
    bytes is left alone. The bytes come from the object store, checked against the hash."""
    base = Path(folder)
    for source, h in sorted(files.items()):
        path = base / stored_path(source, h)
        data = objects.get(h)  # ObjectMissing (a ScellisError) names the hash
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return base


def local_sources(objects: ObjectStore, files: dict[str, str], folder) -> dict[str, Path]:
    """``materialize`` the files, then ``{source: absolute path of its copy}``. In a store
    the user may only read, the copies cannot be written: the objects themselves (the
    same bytes, checked against their hashes) are read in their place."""
    try:
        base = materialize(objects, files, folder).resolve()
    except OSError:
        for h in files.values():
            objects.get(h)
        return {source: objects.path(h).resolve() for source, h in files.items()}
    return {source: base / stored_path(source, h) for source, h in files.items()}


def with_local_data(record: dict, sources: dict[str, Path]) -> dict:
    """``record`` reading its data section's files (``source``, and a ``tokenizer``
    file) from their kept copies when it has them."""
    data = record.get("data")
    if not isinstance(data, dict):
        return record
    local = {k: str(sources[data[k]]) for k in ("source", "tokenizer")
             if isinstance(data.get(k), str) and data[k] in sources}  # fmt: skip
    return {**record, "data": {**data, **local}} if local else record


def unkept(record: dict, files: dict[str, str]) -> list[str]:
    """The files ``record``'s data section reads (``source``, a ``tokenizer`` file) that
    the run keeps no copy of. A stored run may have come from anyone (a run bundle), so
    its paths are never read from the disk: only its kept copies are."""
    data = record.get("data")
    if not isinstance(data, dict):
        return []
    wanted = [data.get("source"), data.get("tokenizer")]
    return [
        p for p in wanted
        if isinstance(p, str) and p != "char" and not p.startswith("bundled:") and p not in files
    ]  # fmt: skip
