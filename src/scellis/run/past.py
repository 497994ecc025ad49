"""A stored run as people read it afterwards (run layer): ``scellis runs show``,
``scellis compare`` and the tab's run view and comparison all read these.

``summary`` is one run: its row, last checkpoint, last and best loss, the record's
metrics at the last validation beside the run's baselines, and the run it branched
from. ``comparison`` is two runs: what differs in how they were made (run fields, run
options, a diff of the two records' text), with both runs' curves.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..store.objects import ObjectStore
from ..store.records import Records
from .options import RunOptions
from .verdict import verdict

# what a comparison names when it differs between the two runs
FIELDS = ("model_id", "record_hash", "dataset_hash", "device", "adapter", "tier", "seed", "status",
          "step")  # fmt: skip
CURVES = ("loss", "lr", "val_loss")


def parent_of(run: dict) -> str | None:
    """``RUN@STEP`` the run branched off from, or None."""
    p = (run.get("config") or {}).get("parent")
    return f"{p['run']}@{p['step']}" if isinstance(p, dict) else None


def summary(rec: Records, run: dict) -> dict:
    """A run (a ``Records.run`` row) with its checkpoints, losses and metrics."""
    cks = rec.checkpoints(run["id"])
    losses = rec.metrics(run["id"], "loss")
    vals = rec.metrics(run["id"], "val_loss")
    out = {
        k: run[k]
        for k in ("id", "status", "model_id", "dataset_hash", "record_hash", "device",
                  "adapter", "tier", "seed", "step", "started", "ended", "heartbeat",
                  "host", "pid", "argv", "config")
    }  # fmt: skip
    out["parent"] = parent_of(run)
    out["last_checkpoint"] = (
        {"step": cks[-1]["step"], "epoch": cks[-1]["epoch"], "manifest": cks[-1]["manifest"]}
        if cks else None
    )  # fmt: skip
    out["checkpoints"] = [c["step"] for c in cks]
    out["loss"] = losses[-1][1] if losses else None
    out["best_loss"] = min((v for _, v in losses if v is not None), default=None)
    out["val_loss"] = vals[-1][1] if vals else None
    # the record's metrics at the last validation, beside the run's baselines
    names = [m for m in rec.metric_names(run["id"]) if m.startswith("val_") and m != "val_loss"]
    out["metrics"] = {m[4:]: rec.metrics(run["id"], m)[-1][1] for m in names}
    out["baselines"] = (run["config"] or {}).get("baselines") or {}
    out["verdict"] = verdict(out["metrics"], out["baselines"])
    return out


def curves_of(rec: Records, rid: str) -> dict[str, list[tuple[int, float]]]:
    """The run's stored curves, each ordered by step."""
    return {k: rec.metrics(rid, k) for k in CURVES}


def comparison(store, refs: tuple[str, str], *, described=summary) -> dict:
    """Runs ``refs`` of ``store`` side by side: ``runs`` (each ``described(records,
    row)``), ``metrics`` (their curves), ``differs`` (run fields), ``plan`` (run
    options) and ``record_diff`` (unified diff of the records' text); each pair a, b."""
    rec, objects = Records(store, readonly=True), ObjectStore(Path(store))
    try:
        ids = [rec.resolve(r) for r in refs]
        runs = [described(rec, rec.run(i)) for i in ids]
        metrics = [curves_of(rec, i) for i in ids]
    finally:
        rec.close()
    texts = [objects.get(r["record_hash"]).decode("utf-8", "replace") for r in runs]
    a, b = runs
    fields = {k: (a[k], b[k]) for k in FIELDS if a[k] != b[k]}
    # how each was driven: its run options (an older run's plan and tab options read the same)
    pa, pb = (RunOptions.from_config(r["config"] or {}).to_config() for r in runs)
    plan = {k: (pa.get(k), pb.get(k)) for k in sorted(set(pa) | set(pb)) if pa.get(k) != pb.get(k)}
    diff = list(difflib.unified_diff(
        texts[0].splitlines(), texts[1].splitlines(), f"{a['id']} record", f"{b['id']} record",
        lineterm="", n=1,
    ))  # fmt: skip
    return {"runs": runs, "metrics": metrics, "differs": fields, "plan": plan, "record_diff": diff}
