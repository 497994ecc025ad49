"""``scellis runs`` and ``scellis runs show RUN`` (cli layer): the store's run records.

A run whose status says running but whose process is gone (stale heartbeat, or a dead
pid on this host) is listed as ``interrupted``, with its last checkpoint and the one
command that resumes it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from ..base.errors import ScellisError
from ..base.files import check_destination, check_output, read_file, write_file
from ..run import past
from ..run.options import RunOptions
from ..run.tensorboard import write_events
from ..store import bundle
from ..store.gc import collect
from ..store.objects import ObjectStore
from ..store.query import WHERE_HELP, RunQuery
from ..store.records import Records
from .run_text import baseline_text, fmt_metric, resume_command


def open_records(store: str, *, readonly: bool = True) -> Records:
    """The store's records, for reading unless told (a read-only store still lists)."""
    root = Path(store)
    if root.exists() and not root.is_dir():
        raise ScellisError(f"{root} is a file, not a store folder")
    if not (root / "records.sqlite").exists():
        raise ScellisError(f"no store at {root} (scellis train --store {root} creates one)")
    return Records(root, readonly=readonly)


def summary(rec: Records, run: dict, root: Path) -> dict:
    """A run (``run.past.summary``) with, when it can continue, how."""
    out = past.summary(rec, run)
    if run["status"] in ("interrupted", "failed"):
        # with no checkpoint there is nothing to continue: the command that starts it over
        cks = out["checkpoints"]
        out["resume"] = resume_command(root, run["id"]) if cks else " ".join(run["argv"])
    return out


def _when(t) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


def _num(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def list_runs(store: str, json_: bool, query: RunQuery | None = None) -> int:
    """The runs of ``store`` (those ``query`` selects), as a table or JSON."""
    rec = open_records(store)
    try:
        found = rec.runs(query)
        rows = [summary(rec, r, Path(store)) for r in found]
    finally:
        rec.close()
    labels = [v.label for v in query.values] if query else []
    if query is not None:  # the values the condition read, beside each run
        for row, r in zip(rows, found):
            row["matched"] = r["matched"]
    if json_:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no runs in {store}" + (" match" if query else ""))
        return 0
    head = f"{'RUN':24} {'STATUS':12} {'MODEL':28} {'DEVICE':10} {'TIER':6} {'STEP':>6} "
    print(
        head
        + f"{'LOSS':>8} {'CKPT':>6}  STARTED"
        + "".join(f"  {x:>{max(10, len(x))}}" for x in labels)
    )
    for r in rows:
        ck = r["last_checkpoint"]["step"] if r["last_checkpoint"] else "-"
        extra = "".join(f"  {_num(r['matched'][x]):>{max(10, len(x))}}" for x in labels)
        print(
            f"{r['id']:24} {r['status']:12} {str(r['model_id'])[:28]:28} {r['device']:10} "
            f"{r['tier']:6} {r['step']:>6} {_num(r['loss']):>8} {ck:>6}  {_when(r['started'])}"
            + extra
        )
    for r in rows:
        if r["parent"]:
            print(f"{r['id']} branches off {r['parent']}")
        if "resume" in r:
            print(f"{r['id']} ({r['status']} at step {r['step']}): {r['resume']}")
    return 0


def show_run(ref: str, store: str, json_: bool) -> int:
    rec = open_records(store)
    try:
        r = summary(rec, rec.run(rec.resolve(ref)), Path(store))
    finally:
        rec.close()
    if json_:
        print(json.dumps(r, indent=2))
        return 0
    print(f"run {r['id']}: {r['status']}")
    if r["parent"]:  # resumed from an older checkpoint of that run: its history to there
        print(f"  {'branch of':13} {r['parent']}")
    for k in ("model_id", "record_hash", "dataset_hash", "device", "adapter", "tier", "seed",
              "step", "host", "pid"):  # fmt: skip
        print(f"  {k:13} {r[k]}")
    edits = (r["config"] or {}).get("edits")
    if edits:  # the run trained the file's record with these changes
        source = r["config"].get("source_hash", "?")
        print(f"  {'record':13} edited from the file's {source[:12]} by {', '.join(edits)}")
    options = (r["config"] or {}).get("options")
    if options:
        defaults = RunOptions().to_config()
        given = {k: v for k, v in options.items() if v != defaults.get(k)}
        print(f"  {'options':13} " + " ".join(f"{k}={v}" for k, v in sorted(given.items())))
    print(f"  {'started':13} {_when(r['started'])}   ended {_when(r['ended'])}")
    print(f"  {'command':13} {' '.join(r['argv'])}")
    print(f"  {'loss':13} last {_num(r['loss'])}  best {_num(r['best_loss'])}  "
          f"val {_num(r['val_loss'])}")  # fmt: skip
    for name, value in r["metrics"].items():
        print(f"  {name:13} {fmt_metric(value)}{baseline_text(r['baselines'], name)}")
    if r.get("verdict"):
        print(f"  {'verdict':13} {r['verdict']['text']}")
    ck = r["last_checkpoint"]
    if ck:
        print(f"  {'checkpoint':13} step {ck['step']} (epoch {ck['epoch']}) {ck['manifest']}")
        print(f"  {'kept':13} steps {', '.join(map(str, r['checkpoints']))}")
    else:
        print(f"  {'checkpoint':13} none")
    if "resume" in r and ck:
        print(f"interrupted at step {r['step']}; resume from step {ck['step']} with: {r['resume']}")
    elif "resume" in r:
        print(f"interrupted at step {r['step']} before any checkpoint; start it again with: "
              f"{r['resume']}")  # fmt: skip
    return 0


@click.group("runs", invoke_without_command=True,
             help="List the store's runs, or those the filters select (or show one).")  # fmt: skip
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
@click.option("--dataset", metavar="HASH", help="runs on this data (a hash or its prefix)")
@click.option("--record", metavar="HASH", help="runs of this record (a hash or its prefix)")
@click.option("--model", metavar="ID", help="runs of this model id (without @VERSION: any version)")
@click.option("--where", metavar="CONDITION", help=WHERE_HELP)
@click.pass_context
def command(ctx, store, json_, dataset, record, model, where):
    ctx.obj = {"store": store, "json": json_}
    filters = (dataset, record, model, where)
    if ctx.invoked_subcommand is None:
        query = RunQuery(*filters) if any(f is not None for f in filters) else None
        return list_runs(store, json_, query)
    if any(f is not None for f in filters):
        raise ScellisError("--dataset, --record, --model and --where filter the list: "
                           f"`scellis runs {ctx.invoked_subcommand}` takes none")  # fmt: skip
    return None


@command.command("show", help="One run: its record, data, device, checkpoints and metrics.")
@click.argument("run", metavar="RUN")
@click.option("--store", default=None, help="the store folder")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
@click.pass_context
def show(ctx, run, store, json_):
    return show_run(run, store or ctx.obj["store"], json_ or ctx.obj["json"])


@command.command("gc", help="Drop unreferenced objects older than the grace period.")
@click.option("--store", default=None, help="the store folder")
@click.option(
    "--grace", type=click.FloatRange(min=0), default=3600.0, show_default=True,
    help="seconds: newer objects are kept (a writer may not have named them yet)",
)  # fmt: skip
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
@click.pass_context
def gc(ctx, store, grace, json_):
    store = store or ctx.obj["store"]
    rec = open_records(store, readonly=False)
    try:
        done = collect(ObjectStore(store), rec, grace_s=grace)
    finally:
        rec.close()
    if json_ or ctx.obj["json"]:
        print(json.dumps(done))
    else:
        print(f"removed {len(done['deleted'])} objects and {done['temp_removed']} temp files; "
              f"{done['live']} referenced, {done['kept_recent']} too recent to judge")  # fmt: skip
    return 0


@command.command("export", help="Write one run (rows, record, checkpoints) as a bundle file.")
@click.argument("run", metavar="RUN")
@click.option("-o", "--output", "output", required=True, help="the bundle file to write")
@click.option("--force", is_flag=True, help="replace an existing bundle file")
@click.option("--store", default=None, help="the store folder")
@click.pass_context
def export(ctx, run, output, force, store):
    check_output(output, replace=force)  # before the bundle is built
    store = store or ctx.obj["store"]
    rec = open_records(store)
    try:
        rid = rec.resolve(run)
        data = bundle.export_run(ObjectStore(store), rec, rid)
    finally:
        rec.close()
    write_file(output, data, replace=force)
    print(f"wrote run {rid} to {output} ({len(data)} bytes)")
    return 0


@command.command("import", help="Add a run bundle (from a tab's Export, or runs export).")
@click.argument("file", metavar="FILE")
@click.option("--store", default=None, help="the store folder")
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
@click.pass_context
def import_(ctx, file, store, json_):
    root = Path(store or ctx.obj["store"])
    data = read_file(file)
    rec = Records(root)
    try:
        rid = bundle.import_run(ObjectStore(root), rec, data)
        status = rec.run(rid)["status"]
    finally:
        rec.close()
    if json_ or ctx.obj["json"]:
        print(json.dumps({"run": rid, "status": status, "resume": resume_command(root, rid)}))
    else:
        print(f"imported run {rid} ({status}); continue it with: {resume_command(root, rid)}")
    return 0


@command.command(
    "export-metrics",
    help="Write a run's recorded metrics as CSV, JSON lines or TensorBoard events.",
)
@click.argument("run", metavar="RUN")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl", "tensorboard"]),
    default="csv",
    show_default=True,
    help="one row per step (csv), one object per value (jsonl), or an event file "
    "for `tensorboard --logdir` (tensorboard: --out names the folder)",
)
@click.option(
    "-o",
    "--output",
    "--out",
    "output",
    default=None,
    help="the file, or the folder for tensorboard (default: stdout)",
)
@click.option("--force", is_flag=True, help="replace an existing --out file")
@click.option("--store", default=None, help="the store folder")
@click.pass_context
def export_metrics(ctx, run, fmt, output, force, store):  # fmt: skip
    if output == "":
        raise ScellisError("--out is empty: name a file (or, for tensorboard, a folder)")
    if fmt == "tensorboard" and output is None:
        raise ScellisError("--format tensorboard writes event files into a folder: add --out DIR")
    if output is not None:  # before the metrics are read; tensorboard adds a new file
        check_destination(output, replace=force, folder=fmt == "tensorboard")
    rec = open_records(store or ctx.obj["store"])
    try:
        rid = rec.resolve(run)
        series = {name: rec.metrics(rid, name) for name in rec.metric_names(rid)}
    finally:
        rec.close()
    if fmt == "tensorboard":
        n = write_events(series, output, run=str(rid))
        print(f"wrote {n} values of run {rid} to {output}; see: tensorboard --logdir {output}")
        return 0
    text = metrics_text_of(series, fmt)
    if output is None:
        print(text, end="")
        return 0
    write_file(output, text.encode("utf-8"), replace=force)
    return 0


def metrics_text_of(series: dict[str, list], fmt: str) -> str:
    """``{name: [(step, value)]}`` as CSV (a row per step, a column per metric; empty
    where a metric has no value at that step) or JSON lines (one value per line)."""
    if fmt == "jsonl":
        rows = sorted((step, name, value) for name, pts in series.items() for step, value in pts)
        return "".join(json.dumps({"step": s, "name": n, "value": v}) + "\n" for s, n, v in rows)
    names = sorted(series)
    by_step: dict[int, dict] = {}
    for name, pts in series.items():
        for step, value in pts:
            by_step.setdefault(step, {})[name] = value
    lines = [",".join(["step", *names])]
    for step in sorted(by_step):
        row = by_step[step]
        lines.append(",".join([str(step), *("" if row.get(n) is None else repr(row[n])
                                            for n in names)]))  # fmt: skip
    return "\n".join(lines) + "\n"
