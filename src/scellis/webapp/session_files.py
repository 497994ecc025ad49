"""Files too large for browser storage (webapp layer): kept in the tab's memory only.

The worker writes ``/scellis`` back to IndexedDB through IDBFS, which puts each file as
one value. The browser holds a copy of a value in memory while it puts it, and a put of
a few GiB (a 1B-parameter model's weights) fails with "out of memory", failing that
write-back whole, and every later one, which tries the same file again. So a file over
``KEEP_LIMIT`` is left out of every write-back: the worker asks ``unsaved_files`` before
each one. Such a file stays where it is, in this tab's memory, until the tab closes; the
store's rows, its smaller objects and a note of each file left out (``NOTES``) are still
written back, so after a reload a record or run that names the file says why it is gone
(``explained``) instead of failing on a missing object.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ..base.errors import ScellisError
from ..ir.limits import human
from ..store.objects import ObjectMissing
from . import tab_store
from .commands import command

# A few hundred MiB: far above what an example's runs and checkpoints write (a few MiB),
# well below the sizes whose puts have failed (GiB), and a write-back of this much takes
# a second or two, which a checkpoint every few steps can afford.
KEEP_LIMIT = 256 << 20
# a write-back that failed anyway says no path: the largest file still saved that is over
# this is the likely cause, and it is left out from then on rather than failing every
# later write-back the same way
FAILED_FLOOR = 16 << 20
PERSIST = Path(tab_store.ROOT).parent  # the folder the worker mounts and writes back
NOTES = "session_only.json"  # under PERSIST: small, written back like the rows
_HASH = re.compile(r"\b([0-9a-f]{64})\b")


def _notes_path(root: Path) -> Path:
    return root / NOTES


_NOTE_KEYS = {"bytes": int, "what": str, "again": str, "told": bool, "gone_told": bool}


def _read_notes(root: Path) -> dict:
    """The notes as written; an entry of another shape (a file cut short or written by
    something else) is dropped rather than trusted, so a bad note costs only its line."""
    try:
        raw = json.loads(_notes_path(root).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {rel: note for rel, note in raw.items() if _well_formed(note)}


def _well_formed(note) -> bool:
    return (
        isinstance(note, dict)
        and all(isinstance(note.get(k), t) for k, t in _NOTE_KEYS.items())
        and (note.get("sha") is None or isinstance(note["sha"], str))
    )


def _write_notes(root: Path, notes: dict) -> None:
    path = _notes_path(root)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(notes, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _sha_of(path: Path) -> str | None:
    """The object hash of a store object's file (``objects/sha256/ab/cdef…``), else None."""
    if path.parent.parent.name != "sha256":
        return None
    h = path.parent.name + path.name
    return h if _HASH.fullmatch(h) else None


def keep_here(path: str | Path, what: str, again: str, told: bool, root=PERSIST) -> dict:
    """Note that ``path`` (``what``: "the weights of model.safetensors") is kept for this
    tab session only; ``again`` says how to get it back after a reload ("import … again");
    ``told``: the user has been told already (the import's own line said it)."""
    root, path = Path(root), Path(path)
    notes = _read_notes(root)
    note = _note(notes, root, path, path.stat().st_size, what, again, told)
    _write_notes(root, notes)
    return note


def too_large(path: str | Path) -> bool:
    return Path(path).stat().st_size > KEEP_LIMIT


def kept_message(note: dict) -> str:
    return (
        f"{note['what']} ({human(note['bytes'])}): too large for browser storage, so kept "
        f"in this tab's memory until it closes; after a reload, {note['again']}"
    )


def gone_message(note: dict) -> str:
    return (
        f"{note['what']} ({human(note['bytes'])}): too large for browser storage, so it "
        f"lasted only until the tab that made it closed; {note['again']}"
    )


def _files(root: Path) -> list[tuple[Path, int]]:
    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            p = Path(folder) / name
            try:
                out.append((p, p.stat().st_size))
            except OSError:  # removed while walked
                continue
    return out


def _may_leave_out(p: Path) -> bool:
    """The runs' rows are never left out (every run would be lost with them), nor the note."""
    return not p.name.startswith("records.sqlite") and p.name != NOTES


def _note(notes: dict, root: Path, p: Path, size: int, what: str, again: str,
          told: bool) -> dict:  # fmt: skip
    """Add to ``notes`` (and return) the note that ``p`` is kept for this session only."""
    note = {"bytes": size, "what": what, "again": again, "told": told, "gone_told": False,
            "sha": _sha_of(p)}  # fmt: skip
    notes[str(p.relative_to(root))] = note
    return note


def _unnoted(notes: dict, root: Path, p: Path, size: int) -> dict:
    """The note of a file no caller named: said by what it is, an object or a file."""
    what = "an object of the run store (model weights or a checkpoint)" if _sha_of(p) else p.name
    return _note(notes, root, p, size, what, "train or import it again", told=False)


@command(writes_store=True)
def unsaved_files(failed: bool = False, root: str = str(PERSIST)) -> dict:
    """Asked by the worker before each write-back: ``skip``, the files to leave out (every
    file over ``KEEP_LIMIT``, and those noted before); ``say``, one line for each one the
    user has not been told of yet; ``gone``, one line for each noted file that a reload
    lost. ``failed``: the last write-back failed, so the largest file still saved over
    ``FAILED_FLOOR`` is left out from now on too."""
    base = Path(root)
    notes, changed = _read_notes(base), False
    files = _files(base)
    present = {str(p.relative_to(base)) for p, _ in files}
    for p, size in files:
        rel = str(p.relative_to(base))
        if size > KEEP_LIMIT and rel not in notes and _may_leave_out(p):
            _unnoted(notes, base, p, size)
            changed = True
    if failed:
        saved = [(s, p) for p, s in files if str(p.relative_to(base)) not in notes]
        saved = [(s, p) for s, p in saved if s > FAILED_FLOOR and _may_leave_out(p)]
        if saved:
            size, p = max(saved)
            _unnoted(notes, base, p, size)
            changed = True
    say, gone = [], []
    for rel, note in notes.items():
        if rel in present and not note["told"]:
            say.append(kept_message(note))
            note["told"], changed = True, True
        elif rel not in present and not note["gone_told"]:
            gone.append(gone_message(note))
            note["gone_told"], changed = True, True
    if changed:
        _write_notes(base, notes)
    skip = [str(base / rel) for rel in notes if rel in present]
    return {"skip": skip, "say": say, "gone": gone}


def explained(e: ScellisError, root=PERSIST) -> ScellisError:
    """A missing object that was kept for an earlier tab session only, said as that;
    any other error as it is."""
    if not isinstance(e, ObjectMissing):
        return e
    found = _HASH.search(str(e))
    if found is None:
        return e
    for note in _read_notes(Path(root)).values():
        if note.get("sha") == found.group(1):
            return ScellisError(gone_message(note))
    return e
