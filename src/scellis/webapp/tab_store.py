"""The tab's run store (webapp layer): the native store's records and objects, in the tab.

The worker mounts a persistent folder (IDBFS) at ``/scellis`` before Python starts and
flushes it to IndexedDB after every ``checkpoint`` and ``end`` event, so a run trained
in the tab is recorded exactly like ``scellis train --store``: its record text is an
object, the run is a ``runs`` row (with the CLI's config: plan, label, base_dir, so
``scellis resume`` can drive it natively), per-step metrics, and a checkpoint (the
train layer's ``checkpoint.save``) every ``checkpoint_every`` steps and at the end.

A run keeps what it needs to be resumed anywhere: the tab's own options (``tab`` in
its config: drop_last, validate, samples; a resume drives the run as it was started)
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

from ..base.errors import ScellisError
from ..data.record import source_path
from ..store import runfiles
from ..store.gc import collect, retain
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train import checkpoint as ckpt

ROOT = "/scellis/store"
# the options a tab run was started with; a run recorded before they were kept (or
# by the CLI) reads as the CLI drives it
OPTIONS = {"drop_last": False, "validate": True, "samples": False, "text_samples": False}
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


class Recorder:
    """Writes one run's metrics and checkpoints as ``fit``'s events arrive."""

    def __init__(self, root: str, rid: str, record_hash: str, dataset: str | None, tier: str,
                 device, checkpoint_every: int, keep_last: int = 3):  # fmt: skip
        self.root, self.rid, self.record_hash = root, rid, record_hash
        self.dataset, self.tier, self.device = dataset, tier, device
        self.every, self.keep_last = max(1, int(checkpoint_every)), keep_last
        self.objects, self.records = ObjectStore(root), Records(root)
        self.last_step = None
        _live.add(rid)

    async def checkpoint(self, ts, reason: str) -> dict | None:
        if self.last_step == ts.step:
            return None
        h, _ = await ckpt.save(
            ts, self.objects, record=self.record_hash, dataset=self.dataset, tier=self.tier,
            extra={"device": self.device.name, "adapter": adapter_of(self.device),
                   "run": self.rid},
        )  # fmt: skip
        score = ts.metrics.get("val_loss", ts.metrics.get("loss"))
        self.records.add_checkpoint(self.rid, ts.step, ts.epoch, ts.batch, h, score)
        self.last_step = ts.step
        retain(self.records, self.rid, self.keep_last, True)
        return {"kind": "checkpoint", "step": ts.step, "manifest": h, "reason": reason,
                "run": self.rid}  # fmt: skip

    async def on_event(self, ev: dict, ts) -> dict | None:
        """Record ``ev``; the checkpoint event to pass on, when one was written."""
        kind = ev["kind"]
        if kind == "log":
            self.records.log(self.rid, ev["step"], ev["epoch"], {"loss": ev["loss"],
                             "lr": ev["lr"]})  # fmt: skip
            if ts.step % self.every == 0:
                return await self.checkpoint(ts, "every")
        elif kind == "eval":
            self.records.log(self.rid, ev["step"], ev["epoch"], {"val_loss": ev["val_loss"]})
        return None

    def finish(self, status: str) -> None:
        _live.discard(self.rid)
        try:
            self.records.finish(self.rid, status)
            if status == "done":
                collect(self.objects, self.records)
        finally:
            self.records.close()


def adapter_of(dev) -> str:
    info = getattr(dev, "info", None)
    return getattr(info, "name", "") or dev.name


def options_of(config: dict) -> dict:
    """The tab options of a run's config, with the defaults for what it does not say."""
    return {**OPTIONS, **{k: v for k, v in (config.get("tab") or {}).items() if k in OPTIONS}}


def keep_data_files(objects: ObjectStore, record: dict) -> dict[str, str]:
    """Keep the file behind ``record``'s data section (not a bundled one) as an object:
    ``{source: sha256}``, or ``{}`` when the data comes with the package."""
    data = record.get("data")
    source = data.get("source") if isinstance(data, dict) else None
    if not isinstance(source, str) or source.startswith("bundled:"):
        return {}
    return runfiles.keep(objects, {source: source_path(source)})


def data_folder(objects: ObjectStore, rid: str, config: dict) -> str:
    """Where a resume reads run ``rid``'s data from: its kept files written out under a
    scratch folder of this process (the worker's memory in a tab), else ``.``."""
    files = config.get("files") or {}
    if not files:
        return "."
    folder = Path(tempfile.gettempdir()) / "scellis-run-files" / rid
    return str(runfiles.materialize(objects, files, folder))


def load_checkpoint(ts, objects: ObjectStore, records: Records, rid: str, step=None):
    """Load run ``rid``'s checkpoint at ``step`` into ``ts`` (or, without a step, its
    latest one that loads); returns (manifest, checkpoint row, skipped reasons)."""
    cks = records.checkpoints(rid)
    if step is not None:
        chosen = [c for c in cks if c["step"] == int(step)]
        if not chosen:
            have = ", ".join(str(c["step"]) for c in cks) or "none"
            raise ScellisError(f"run {rid} has no checkpoint at step {step} (it has: {have})")
        return ckpt.load(ts, objects, chosen[0]["manifest"]), chosen[0], []
    skipped = []
    for c in reversed(cks):
        try:
            return ckpt.load(ts, objects, c["manifest"]), c, skipped
        except ScellisError as e:
            skipped.append(f"checkpoint at step {c['step']}: {e}")
    raise ScellisError(f"run {rid} has no usable checkpoint ({'; '.join(skipped) or 'none'})")
