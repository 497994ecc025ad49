"""Checkpoint retention and object garbage collection (store layer).

Retention keeps, per run, the last ``keep_last`` checkpoints and the one with the
lowest loss (``keep_best``); the other checkpoint rows are dropped. Collection then
deletes objects no row references, directly or through a manifest.

Safety against a concurrent writer: a writer stores its objects first and the row
that references them last, so an object can be briefly unreferenced. Collection
therefore lists the objects before reading the references, and never deletes an
object modified after ``start - grace_s`` (``put`` refreshes the time of an object it
finds already stored, so a re-used old object is protected too). Stale temp files
(from a writer that died mid-object) older than the grace period are removed.
"""

from __future__ import annotations

import time

from ..base.errors import ScellisError
from .manifest import objects_of, read_manifest
from .objects import ObjectStore
from .records import Records

GRACE_S = 3600.0


def retain(records: Records, rid: str, keep_last: int = 3, keep_best: bool = True) -> list[int]:
    """Drop the run's checkpoints outside the last K and the best; returns dropped steps."""
    if keep_last < 1:
        raise ScellisError(f"keep_last must be >= 1, got {keep_last}")
    cks = records.checkpoints(rid)
    keep = {c["step"] for c in cks[-keep_last:]}
    scored = [c for c in cks if c["loss"] is not None]
    if keep_best and scored:
        keep.add(min(scored, key=lambda c: (c["loss"], -c["step"]))["step"])
    drop = [c["step"] for c in cks if c["step"] not in keep]
    if drop:
        records.drop_checkpoints(rid, drop)
    return drop


def collect(objects: ObjectStore, records: Records, grace_s: float = GRACE_S) -> dict:
    """Delete unreferenced objects older than the grace period; returns what it did."""
    start = time.time()
    cutoff = start - grace_s
    listed = objects.list()  # before the references: anything newer is left alone
    roots = records.referenced()
    live = set(roots)
    for h in roots:
        if not objects.has(h):
            continue
        try:
            live |= objects_of(read_manifest(objects, h))
        except ScellisError:
            pass  # a record or model object, not a manifest: it references nothing
    deleted, kept_new = [], 0
    for h, mtime in listed:
        if h in live:
            continue
        if mtime >= cutoff:
            kept_new += 1
            continue
        objects.delete(h)
        deleted.append(h)
    temps = 0
    for p in objects.temp_files():
        try:
            if p.stat().st_mtime < cutoff:
                p.unlink()
                temps += 1
        except FileNotFoundError:
            pass
    return {"deleted": deleted, "kept_recent": kept_new, "temp_removed": temps, "live": len(live)}
