"""The record a run trains (run layer): the user's text with the run's edits applied.

``--set optimizer.lr=3e-4`` and the shorthands (``--lr``, ``--epochs``...) edit the
record's text in place (comments and layout kept) before it is validated, so an edit
that makes the record invalid is reported at its line and column like any other
problem, and the run stores the text it really trained. The edits are recorded with
the run, next to the hash of the file as it was. An edit that adds a section adds it
past the end of the user's file, so a problem there is told at the ``--set`` argument
that wrote it, not at a line the user cannot find. An edit of ``data.window`` or
``data.horizon`` carries the record with it (``follow_data``): inputs of the old window's
length take the new one, and an output block giving the old horizon's values per
window (``n_outputs``) gives the new one's, so the record stays consistent with its data.
"""

from __future__ import annotations

import hashlib

from ..base.errors import Diagnostic, ScellisError
from ..sml import emit, parse


def effective_record(raw: bytes, label: str, edits: list) -> bytes:
    """``raw`` with each ``(path, value, as_typed)`` edit applied; ``raw`` itself when
    there are none (or when it does not parse: validation reports that, located)."""
    if not edits:
        return raw
    try:
        doc = parse(raw, label)
    except ScellisError:
        return raw
    before = dict(doc.data.get("data") or {}) if isinstance(doc.data.get("data"), dict) else {}
    for path, value, typed in edits:
        _set(doc, tuple(path), value, typed)
    follow_data(doc, before)
    return emit(doc).encode("utf-8")


def follow_data(doc, before: dict) -> None:
    """Make ``doc``'s inputs and output head follow its data section's window and horizon
    where they changed from ``before`` (see the module note)."""
    data = doc.data.get("data")
    if not isinstance(data, dict):
        return
    old, new = before.get("window"), data.get("window")
    inputs = doc.data.get("inputs")
    if old is not None and old != new and isinstance(new, int) and isinstance(inputs, dict):
        for name, spec in inputs.items():
            shape = spec.get("shape") if isinstance(spec, dict) else None
            if isinstance(shape, list) and len(shape) >= 2 and shape[1] == old:
                doc.set(("inputs", name, "shape"), [shape[0], new, *shape[2:]])
    old, new = before.get("horizon", 1), data.get("horizon", 1)
    blocks = doc.data.get("blocks")
    if old == new or not isinstance(new, int) or isinstance(new, bool) or not isinstance(
            blocks, dict):  # fmt: skip
        return
    for name in doc.data.get("outputs") or []:
        block = blocks.get(name) if isinstance(name, str) else None
        if isinstance(block, dict) and block.get("n_outputs") == old:
            doc.set(("blocks", name, "n_outputs"), new)


def _set(doc, path: tuple, value, typed: str) -> None:
    try:
        set_path(doc, path, value)
    except ScellisError as e:
        raise ScellisError(f"--set {typed}: {e}") from None


def set_path(doc, path: tuple, value) -> None:
    """Set ``path`` of the Document ``doc`` to ``value``, as ``--set`` does: a missing
    parent mapping is made with the rest of the path inside it."""
    for depth in range(len(path), 0, -1):
        head, rest = path[:depth], path[depth:]
        if depth > 1 and doc.node(head[:-1]) is None:
            continue
        for key in reversed(rest):
            value = {key: value}
        doc.set(head, value)
        return


class EditProblem(Diagnostic):
    """A problem in what an edit wrote past the end of the file: ``--set PATH=VALUE: ...``."""

    def __init__(self, d: Diagnostic, typed: str):
        super().__init__(d.message, d.file, d.line, d.col, d.fix)
        self.args = (f"--set {typed}: {d.message}" + (f" ({d.fix})" if d.fix else ""),)


def at_edits(problems: list, raw: bytes, text: bytes, label: str, edits: list) -> list:
    """``problems`` of the effective record ``text``, those past the end of ``raw`` told
    at the edit that wrote the lines they are on."""
    last = len(raw.decode("utf-8", "replace").splitlines())
    if not edits or all(d.file != label or d.line <= last for d in problems):
        return problems
    doc = parse(text, label)
    # (line of the edit's section, line of its key, typed) for the sections edits added
    added = [(doc.where(tuple(p[:1]), key=True)[0], doc.where(tuple(p), key=True)[0], t)
             for p, _, t in edits]  # fmt: skip
    added = [a for a in added if a[0] > last]
    out = []
    for d in problems:
        mine = [a for a in added if a[0] <= d.line] if d.file == label and d.line > last else []
        if not mine:
            out.append(d)
            continue
        section = max(a[0] for a in mine)
        mine = [a for a in mine if a[0] == section]
        by_key = [a for a in mine if a[1] <= d.line]
        out.append(EditProblem(d, max(by_key)[2] if by_key else mine[0][2]))
    return out


def sha256_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
