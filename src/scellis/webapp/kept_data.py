"""Data files pinned in the tab, kept across reloads (webapp layer).

The data panel saves a pinned file under ``datasets/`` of the worker's in-memory file
system and the record names it there (``data.source: datasets/load.csv``). That folder
is gone after a reload, while the record comes back as a draft (localStorage). So a
copy of each pinned file is kept in the persistent folder the worker mounts (IDBFS,
``/scellis``, written back to IndexedDB after each command), and ``restore_data``
writes the copies back under ``datasets/`` when the worker starts: the restored draft
trains on the same bytes, and its ``sha256`` still holds.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .commands import command

KEPT = "/scellis/datasets"  # inside the worker's persistent mount
FOLDER = "datasets"  # where the data panel saves a pinned file (dataset_api)


def keep(path: str | Path, kept: str = KEPT) -> bool:
    """Copy the pinned file at ``path`` into ``kept`` (only where the persistent folder
    above it exists: the tab's worker; a native caller has none). True when kept."""
    root = Path(kept)
    if not root.parent.is_dir():
        return False
    root.mkdir(exist_ok=True)
    shutil.copyfile(path, root / Path(path).name)
    return True


@command(writes_store=False)
def restore_data(kept: str = KEPT, folder: str = FOLDER) -> list[str]:
    """Write every kept file back under ``folder`` where it is missing or differs; the
    names written, for the page's log."""
    root = Path(kept)
    if not root.is_dir():
        return []
    out = Path(folder)
    written = []
    for src in sorted(p for p in root.iterdir() if p.is_file()):
        dst = out / src.name
        data = src.read_bytes()
        if dst.is_file() and dst.read_bytes() == data:
            continue
        out.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
        written.append(src.name)
    return written
