"""The record a run trains (run layer): the user's text with the run's edits applied.

``--set optimizer.lr=3e-4`` and the shorthands (``--lr``, ``--epochs``...) edit the
record's text in place (comments and layout kept) before it is validated, so an edit
that makes the record invalid is reported at its line and column like any other
problem, and the run stores the text it really trained. The edits are recorded with
the run, next to the hash of the file as it was.
"""

from __future__ import annotations

import hashlib

from ..base.errors import ScellisError
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
    for path, value, typed in edits:
        _set(doc, tuple(path), value, typed)
    return emit(doc).encode("utf-8")


def _set(doc, path: tuple, value, typed: str) -> None:
    # a missing parent mapping is made with the rest of the path inside it
    for depth in range(len(path), 0, -1):
        head, rest = path[:depth], path[depth:]
        if depth > 1 and doc.node(head[:-1]) is None:
            continue
        for key in reversed(rest):
            value = {key: value}
        try:
            doc.set(head, value)
        except ScellisError as e:
            raise ScellisError(f"--set {typed}: {e}") from None
        return


def sha256_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()
