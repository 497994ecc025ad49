"""A run's data files as objects (store layer): kept by hash, written back out by path.

A run trained on a file the user loaded (a CSV or text file in the tab's data panel)
names it in its record by a relative ``source`` path, and that file lives outside the
store. So the run keeps each such file as an object and lists it in its config as
``files: {source: sha256}``; a resume elsewhere (a reloaded tab, another window, the
native CLI after ``scellis runs import``) writes the files back under a folder of its
own and reads the record's data relative to that folder. Only bytes and paths here:
which sources are files is the caller's business.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..base.errors import ScellisError
from .objects import ObjectStore


def keep(objects: ObjectStore, paths: dict[str, Path]) -> dict[str, str]:
    """Store each file of ``{source: path}``; returns ``{source: sha256}``."""
    out = {}
    for source, path in paths.items():
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            msg = f"cannot keep the run's data file {source}: {e.strerror or e}"
            raise ScellisError(msg) from None
        out[source] = objects.put(data)
    return out


def _relative(source: str) -> PurePosixPath:
    p = PurePosixPath(source.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ScellisError(
            f"the run's data file {source!r} is not a relative path inside its folder; "
            "it cannot be written back out"
        )
    return p


def materialize(objects: ObjectStore, files: dict[str, str], folder) -> Path:
    """Write ``{source: sha256}`` under ``folder`` (each at its source path) and return
    the folder: the base directory to read the record's data from. A file already there
    with the right bytes is left alone."""
    base = Path(folder)
    for source, h in sorted(files.items()):
        path = base / _relative(source)
        data = objects.get(h)  # ObjectMissing (a ScellisError) names the hash
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return base
