"""The tab's run store (webapp layer): the native store's records and objects, in the tab.

The worker mounts a persistent folder (IDBFS) at ``/scellis`` before Python starts and
flushes it to IndexedDB after every event whose kind persists (``checkpoint``, ``end``),
so a run trained in the tab is recorded by the run session exactly like ``scellis
train --store``: its record text is an object, the run is a ``runs`` row with its
options, label and base_dir (``scellis resume`` can drive it natively), per-step
metrics, and checkpoints; a run also keeps the data file the user loaded (``files``:
kept as an object, written back out for a resume, carried by the run's bundle).

A tab has no process table to ask whether a run is alive: a run still marked
``running`` whose heartbeat predates this worker's start was left by a tab that died
(this origin's store has one writer, the worker of the tab that trains), so it reads
``interrupted``; one beating since this worker started is the live run.
"""

from __future__ import annotations

import contextlib
import time

from ..run.options import RunOptions
from ..run.past import parent_of
from ..store.query import RunQuery
from ..store.records import Records

ROOT = "/scellis/store"
_BOOT = time.time()
_live: set[str] = set()  # runs this worker is driving now


def opened() -> None:
    """The worker (re)mounted the store after another window held it: a run still marked
    ``running`` from before now is not this worker's (that window let the store go, or
    died), so it reads ``interrupted``."""
    global _BOOT
    _BOOT = time.time()


def status_of(run: dict) -> str:
    """The run's status as the tab sees it (see the module note)."""
    if run["status"] != "running":
        return run["status"]
    if run["id"] in _live or (run["heartbeat"] or 0) >= _BOOT:
        return "running"
    return "interrupted"


def list_runs(root: str = ROOT, query: RunQuery | None = None) -> list[dict]:
    """Every run in the tab's store (those ``query`` selects), newest first, with the
    tab's reconciled status (and, filtered, the metric values the condition read)."""
    records = Records(root)
    try:
        out = []
        for r in reversed(records.runs(query)):
            cks = records.checkpoints(r["id"])
            out.append(
                {
                    "id": r["id"],
                    "status": status_of(r),
                    "step": r["step"],
                    # the run's own max steps (a resume's larger one included)
                    "max_steps": RunOptions.from_config(r["config"] or {}).max_steps,
                    "record": r["record_hash"],
                    "model": r["model_id"],
                    "device": r["device"],
                    "started": r["started"],
                    "checkpoint_step": cks[-1]["step"] if cks else None,
                    "checkpoints": [c["step"] for c in cks],
                    "parent": parent_of(r),
                    "dataset": r["dataset_hash"],
                    "matched": r.get("matched"),
                }
            )
        return out
    finally:
        records.close()


@contextlib.contextmanager
def live(rid: str | None):
    """While the block runs, run ``rid`` is this worker's live run (see ``status_of``)."""
    if rid is not None:
        _live.add(rid)
    try:
        yield
    finally:
        _live.discard(rid)
