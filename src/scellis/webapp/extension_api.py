"""Load extension… in the tab (webapp layer): the user's own catalog files, by their choice.

The tab's counterpart of ``--extensions``: the user picks ``.py`` files, the page sends
each one's name and text, and ``load_extension`` writes it under a folder of the
worker's in-memory file system and loads it through ``catalog.extensions`` as the CLI
does. Its entries (blocks, optimizers, losses...) then validate, plan and train like
built-ins, and a record whose ``extensions:`` names only files the user loaded is
accepted (its own list is never run); a record naming any other file is still refused.
Nothing else in the tab loads code: an imported run, a bundle or a shared link names
files, never brings them.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

from ..base.errors import ScellisError
from ..catalog.extensions import load_extensions
from ..catalog.registry import entries
from .commands import command

# a plain file name: no folder, no way out of the tab's extension folder
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,79}\.py$")
_MAX_BYTES = 1 << 20
_FOLDER: list[Path] = []


def _folder() -> Path:
    if not _FOLDER:
        _FOLDER.append(Path(tempfile.mkdtemp(prefix="scellis-extensions-")))
    return _FOLDER[0]


@command(writes_store=False)
def load_extension(name: str, text: str) -> dict:
    """Load the user's file ``name`` (its ``text``) as a catalog extension: ``{name,
    registered: [{id, kind}]}``, the entries it added. A failure inside the file is one
    ScellisError naming ``name`` and its line; a file loaded before is not run again."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ScellisError(f"an extension is a .py file with a plain name, not {name!r}")
    data = text.encode("utf-8") if isinstance(text, str) else b""
    if not data or len(data) > _MAX_BYTES:
        raise ScellisError(f"{name}: an extension file holds 1 byte to 1 MiB of Python")
    # one folder per content: a changed file is a new module, the old one stays loaded
    where = _folder() / hashlib.sha256(data).hexdigest()[:12]
    where.mkdir(exist_ok=True)
    path = where / name
    path.write_bytes(data)
    before = {e.id for e in entries()}
    load_extensions([path])
    added = [{"id": e.id, "kind": e.kind} for e in entries() if e.id not in before]
    return {"name": name, "registered": added}
