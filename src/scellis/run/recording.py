"""A run's rows in the store as it trains and when it resumes (run layer).

What the run session writes for ``scellis train`` and the tab alike. ``new_run``
registers a run. ``RunRecorder`` writes, while ``fit`` runs, the metrics of its
``log`` and ``eval`` events and checkpoints (at most one per step), each recorded
with its score and followed by the run's retention (the last ``keep_last`` and the
best). ``restore`` is what ``scellis resume`` and the tab's resume both do: load the
latest checkpoint that loads (naming the ones skipped) or the one asked for, check
that the data is the run's and that steps are left, and reopen the run row, or, from
a checkpoint older than the run's last, start a branch run (``RUN@STEP`` its parent).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import ScellisError
from ..data.record import source_path, tokenizer_path
from ..store import runfiles
from ..store.gc import collect, retain
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train import checkpoint as ckpt


def adapter_of(dev) -> str:
    """The adapter a device runs on (its name where it has no adapter info)."""
    info = getattr(dev, "info", None)
    return getattr(info, "name", "") or dev.name


def keep_data_files(objects: ObjectStore, record: dict, base_dir=".") -> dict[str, str]:
    """Keep the files behind ``record``'s data section (read from ``base_dir``; not a
    bundled one) as objects: ``{source: sha256}`` (and the tokenizer's file under the
    ``tokenizer`` value), or ``{}`` when the data comes with the package. What a run
    lists as its ``files``, on either host."""
    data = record.get("data")
    if not isinstance(data, dict):
        return {}
    paths = {}
    source = data.get("source")
    if isinstance(source, str) and not source.startswith("bundled:"):
        paths[source] = source_path(source, base_dir)
    tok = data.get("tokenizer")
    if isinstance(tok, str) and tok != "char":  # a tokenizer.json travels with the text
        paths[tok] = tokenizer_path(tok, base_dir)
    return runfiles.keep(objects, paths)


def new_run(objects: ObjectStore, records: Records, raw: bytes, prep, config: dict, *,
            argv: list[str], base_dir=".") -> tuple[str, str]:  # fmt: skip
    """Register a run of ``prep`` (a ``run.prepare.Prepared``): its record text as an
    object and a runs row whose config (``config``: the run's options, edits and data
    files, plus the record's label and ``base_dir``) is what a resume reads back, here
    or on the other host. Returns (run id, record hash)."""
    record_hash = objects.put(raw)
    dev = prep.device
    rid = records.new_run(
        record_hash=record_hash, model_id=prep.record.get("model"), dataset_hash=prep.digest,
        device=dev.name, adapter=adapter_of(dev), tier=prep.tier, seed=prep.seed, argv=argv,
        config={**config, "label": prep.label, "base_dir": str(base_dir)},
    )  # fmt: skip
    return rid, record_hash


class RunRecorder:
    """Writes one run's metrics and checkpoints into ``objects`` and ``records``.

    ``fault``, when given, is called with ``before_record`` and the step between a
    checkpoint's objects and its row (the fault-injection seam, as in ``ckpt.save``)."""

    def __init__(self, objects: ObjectStore, records: Records, rid: str, *, record_hash: str,
                 dataset: str | None, tier: str, device, keep_last: int = 3,
                 keep_best: bool = True, fault=None):  # fmt: skip
        self.objects, self.records, self.rid = objects, records, rid
        self.record_hash, self.dataset, self.tier, self.device = record_hash, dataset, tier, device
        self.keep_last, self.keep_best, self.fault = keep_last, keep_best, fault
        self.last_step = None  # the step of the last checkpoint written

    def log(self, ev) -> None:
        """The metrics row of a ``log`` or ``eval`` event (other events write none)."""
        if ev.kind == "log":
            self.records.log(self.rid, ev.step, ev.epoch, {"loss": ev.loss, "lr": ev.lr})
        elif ev.kind == "eval":
            values = {"val_loss": ev.val_loss}
            values.update({f"val_{k}": v for k, v in (ev.metrics or {}).items()})
            self.records.log(self.rid, ev.step, ev.epoch, values)

    def finish(self, status: str) -> None:
        """Record how the run ended (done runs also let go of unreferenced objects) and
        close the store. A full disk may refuse the row: the run then reads as
        interrupted once its process is gone, which is as resumable."""
        try:
            self.records.finish(self.rid, status)
            if status == "done":
                collect(self.objects, self.records)
        except ScellisError:
            pass
        finally:
            self.records.close()

    async def save(self, ts) -> str | None:
        """Checkpoint ``ts`` (None: this step has one already); returns the manifest hash."""
        if self.last_step == ts.step:
            return None
        dev = self.device
        extra = {"device": dev.name, "adapter": adapter_of(dev), "run": self.rid}
        h, _ = await ckpt.save(
            ts, self.objects, record=self.record_hash, dataset=self.dataset, tier=self.tier,
            fault=self.fault, extra=extra,
        )  # fmt: skip
        if self.fault is not None:
            self.fault("before_record", ts.step)
        # "best" judges by the validation loss when the run evaluates, else the training loss
        score = ts.metrics.get("val_loss", ts.metrics.get("loss"))
        self.records.add_checkpoint(self.rid, ts.step, ts.epoch, ts.batch, h, score)
        self.last_step = ts.step
        retain(self.records, self.rid, self.keep_last, self.keep_best)
        return h


def latest_usable(objects: ObjectStore, records: Records, rid: str, device):
    """(checkpoint row, state dict, manifest, skipped) of the run's latest checkpoint
    whose objects load on ``device``; ``skipped`` names the later ones that did not."""
    skipped = []
    for c in reversed(records.checkpoints(rid)):
        try:
            sd, m = ckpt.state_dict_of(objects, c["manifest"], device)
            return c, sd, m, skipped
        except ScellisError as e:
            skipped.append(f"checkpoint at step {c['step']}: {e}")
    why = ("; ".join(skipped)) if skipped else "it has none"
    raise ScellisError(f"run {rid} has no usable checkpoint to resume from ({why})")


@dataclass
class Restored:
    checkpoint: dict  # its records row: step, epoch, batch, manifest
    manifest: dict
    skipped: list[str]
    run: str  # the run that continues: the same one, or a new branch of it
    parent: str | None = None  # RUN@STEP a branch started from


def checkpoint_at(objects: ObjectStore, records: Records, rid: str, step: int, device):
    """(checkpoint row, state dict, manifest, []) of the run's checkpoint at ``step``."""
    cks = records.checkpoints(rid)
    for c in cks:
        if c["step"] == int(step):
            sd, m = ckpt.state_dict_of(objects, c["manifest"], device)
            return c, sd, m, []
    have = ", ".join(str(c["step"]) for c in cks) or "none"
    raise ScellisError(f"run {rid} has no checkpoint at step {step} (it has: {have})")


def restore(objects: ObjectStore, records: Records, rid: str, prep, *, max_steps: int | None,
            epochs: int | None = None, step: int | None = None) -> Restored:  # fmt: skip
    """Continue run ``rid`` in ``prep`` (a ``run.prepare.Prepared`` of its record):
    its state from the latest usable checkpoint (or the one at ``step``), refused when
    the data hashes otherwise or no step is left (``max_steps`` reached; with ``epochs``,
    every epoch done). From the latest usable checkpoint the run row is reopened on
    ``prep``'s device and tier (later metrics, and checkpoints that did not load, are
    dropped); from an older ``step`` a new run branches off at it and ``rid``'s later
    history stays."""
    if step is None:
        c, sd, m, skipped = latest_usable(objects, records, rid, prep.device)
    else:
        c, sd, m, skipped = checkpoint_at(objects, records, rid, step, prep.device)
    digest, trained = prep.digest, m["dataset"]
    if digest is not None and trained not in (None, digest):
        raise ScellisError(
            f"the data of run {rid} changed: it hashes to {digest[:12]}, the run "
            f"trained on {trained[:12]}"
        )
    ts = prep.ts
    ts.load_state_dict(sd)
    if max_steps is not None and ts.step >= max_steps:
        raise ScellisError(f"run {rid} is already at step {ts.step} (asked for {max_steps})")
    if epochs is not None and ts.epoch >= epochs:
        raise ScellisError(
            f"run {rid} has finished its {epochs} epochs: nothing is left to resume (train "
            "its record again with --epochs N for a longer run)"
        )
    dev = prep.device
    where = {"device": dev.name, "adapter": adapter_of(dev), "tier": prep.tier}
    if step is not None and c["step"] < records.checkpoints(rid)[-1]["step"]:
        # an older checkpoint than the last: a branch, so the later history stays
        run = records.branch_run(rid, c["step"], **where)
        return Restored(c, m, skipped, run=run, parent=f"{rid}@{c['step']}")
    records.reopen_run(rid, step=c["step"], **where)
    return Restored(c, m, skipped, run=rid)
