"""The tab's run store (webapp layer): the native store's records and objects, in the tab.

The worker mounts a persistent folder (IDBFS) at ``/scellis`` before Python starts and
flushes it to IndexedDB after every ``checkpoint`` and ``end`` event, so a run trained
in the tab is recorded exactly like ``scellis train --store``: its record text is an
object, the run is a ``runs`` row (with the CLI's config: plan, label, base_dir, so
``scellis resume`` can drive it natively), per-step metrics, and a checkpoint (the
train layer's ``checkpoint.save``) every ``checkpoint_every`` steps and at the end.

A run keeps what it needs to be resumed anywhere: the tab's own options (``tab`` in
its config: drop_last, validate, samples...; a resume drives the run as it was started)
and the data file it trained on when the user loaded one (``files``: kept as an
object, written back out for a resume, carried by the run's bundle).

A tab has no process table to ask whether a run is alive: a run still marked
``running`` whose heartbeat predates this worker's start was left by a tab that died
(this origin's store has one writer, the worker of the tab that trains), so it reads
``interrupted``; one beating since this worker started is the live run.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..store import runfiles
from ..store.gc import collect
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train.recording import RunRecorder, adapter_of  # noqa: F401  (run_api names it here)

ROOT = "/scellis/store"
# the options a tab run was started with (``train``'s keywords); a run recorded before
# they were kept, or by the CLI, reads as the CLI drives it
OPTIONS = {"drop_last": False, "validate": True, "samples": False, "text_samples": False,
           "eval_every": None, "val_rows": None, "sample_chars": 40, "replay": False}  # fmt: skip
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


def list_runs(root: str = ROOT) -> list[dict]:
    """Every run in the tab's store, newest first, with the tab's reconciled status."""
    records = Records(root)
    try:
        out = []
        for r in reversed(records.runs()):
            cks = records.checkpoints(r["id"])
            out.append(
                {
                    "id": r["id"],
                    "status": status_of(r),
                    "step": r["step"],
                    "model": r["model_id"],
                    "device": r["device"],
                    "started": r["started"],
                    "checkpoint_step": cks[-1]["step"] if cks else None,
                    "checkpoints": [c["step"] for c in cks],
                }
            )
        return out
    finally:
        records.close()


class Recorder(RunRecorder):
    """Writes one run's metrics and checkpoints as ``fit``'s events arrive (the train
    layer's ``RunRecorder``, as the CLI's, over this store), with the tab's events."""

    def __init__(self, root: str, rid: str, record_hash: str, dataset: str | None, tier: str,
                 device, checkpoint_every: int, keep_last: int = 3):  # fmt: skip
        super().__init__(
            ObjectStore(root), Records(root), rid, record_hash=record_hash, dataset=dataset,
            tier=tier, device=device, keep_last=keep_last,
        )  # fmt: skip
        self.root, self.every = root, max(1, int(checkpoint_every))
        _live.add(rid)

    async def checkpoint(self, ts, reason: str) -> dict | None:
        h = await self.save(ts)
        if h is None:
            return None
        return {"kind": "checkpoint", "step": ts.step, "manifest": h, "reason": reason,
                "run": self.rid}  # fmt: skip

    async def on_event(self, ev: dict, ts) -> dict | None:
        """Record ``ev``; the checkpoint event to pass on, when one was written."""
        self.log(ev)
        if ev["kind"] == "log" and ts.step % self.every == 0:
            return await self.checkpoint(ts, "every")
        return None

    def finish(self, status: str) -> None:
        _live.discard(self.rid)
        try:
            self.records.finish(self.rid, status)
            if status == "done":
                collect(self.objects, self.records)
        finally:
            self.records.close()


def options_of(config: dict) -> dict:
    """The tab options of a run's config, with the defaults for what it does not say."""
    return {**OPTIONS, **{k: v for k, v in (config.get("tab") or {}).items() if k in OPTIONS}}


def local_data(objects: ObjectStore, rid: str, config: dict, record: dict) -> tuple[dict, str]:
    """(record, base_dir) a resume of run ``rid`` reads its data with: its kept files
    written out under a scratch folder of this process (the worker's memory in a tab),
    the record's data section pointed at its copy (a native run's CSV may have been
    named by an absolute path); the record as it is and ``.`` when it kept none."""
    files = config.get("files") or {}
    if not files:
        return record, "."
    folder = Path(tempfile.gettempdir()) / "scellis-run-files" / rid
    sources = runfiles.local_sources(objects, files, folder)
    return runfiles.with_local_data(record, sources), str(folder)
