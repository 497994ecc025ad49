"""``scellis resume RUN`` (cli layer): continue a run from its latest usable checkpoint.

The run's record comes from the store (its text is an object), its data is reloaded
and must hash to the run's dataset, and the way it was driven (epochs, step limit,
log and checkpoint intervals) comes from the run's config. On the device, adapter and
tier it ran on, a ``debug``-tier run continues bitwise; anywhere else it continues,
and says that bitwise continuation is not promised. A checkpoint whose objects are
missing or corrupt is skipped (named) for the one before it.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..base.errors import ScellisError
from ..store import runfiles
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train.recording import adapter_of, restore
from .runner import Output, Plan, drive, prepare


def resume(ref, store, to_step, device, json_, print_every, fault=None, writer=None,
           tier=None) -> int:  # fmt: skip
    root = Path(store)
    if not (root / "records.sqlite").exists():
        raise ScellisError(f"no store at {root} (train with --store {root} first)")
    objects, records = ObjectStore(root), Records(root)
    try:
        rid = records.resolve(ref)
        run = records.run(rid)
        if run["status"] == "running":
            raise ScellisError(f"run {rid} is still running (pid {run['pid']} on {run['host']})")
        if run["status"] == "done" and to_step is None:
            raise ScellisError(
                f"run {rid} is done at step {run['step']}; --to-step N continues it further"
            )
        cfg = run["config"]
        plan = Plan(**cfg["plan"])
        if to_step is not None:
            plan.max_steps = to_step
        raw = objects.get(run["record_hash"])
        # the data files the run kept (by hash), written out under the store: the run
        # reads them, wherever the original files went
        files = cfg.get("files") or {}
        sources = runfiles.local_sources(objects, files, root / "files" / rid) if files else None
        s = prepare(raw, cfg["label"], Path(cfg["base_dir"]), device or run["device"],
                    epochs=plan.epochs, sources=sources)  # fmt: skip
        tab = cfg.get("tab") or {}  # a run started in a tab: drive it as the tab did
        if tab.get("drop_last"):
            s.train.drop_last = True
        if tab.get("validate") is False:
            s.val = None
        if tier is not None:  # continue under another determinism tier than the record's
            s.set_tier(tier)
        back = restore(objects, records, rid, s, max_steps=plan.max_steps, epochs=plan.epochs)
    finally:
        records.close()
    c, m, skipped = back.checkpoint, back.manifest, back.skipped
    total = len(s.train) * plan.epochs
    total = min(total, plan.max_steps) if plan.max_steps is not None else total
    out = Output(json_, print_every, total)
    for line in skipped:
        out.info(f"skipped {line}")
    same = (m.get("device"), m.get("adapter"), m["tier"]) == (
        s.device.name, adapter_of(s.device), s.tier,
    )  # fmt: skip
    out.info(
        f"scellis resume {rid}: from step {c['step']} (epoch {c['epoch']}, batch {c['batch']}) "
        f"on {s.device.name}" + (f" ({s.why})" if s.why else ""),
        run=rid, step=c["step"], manifest=c["manifest"],
    )  # fmt: skip
    if not same:
        out.info(
            f"note: the checkpoint was written on {m.get('device')} ({m.get('adapter')}, "
            f"{m['tier']} tier) and this resume runs on {s.device.name} "
            f"({adapter_of(s.device)}, {s.tier} tier): it continues, but bitwise "
            "continuation is not promised",
            bitwise=False,
        )  # fmt: skip
    elif s.tier != "debug":
        out.info(
            f"note: the {s.tier} tier continues within its tolerance; only debug promises a "
            "bitwise continuation",
            bitwise=False,
        )
    return drive(s, plan, root, rid, run["record_hash"], out, fault=fault, writer=writer)


@click.command("resume", help="Continue a run from its latest checkpoint.")
@click.argument("run", metavar="RUN")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--to-step", type=click.IntRange(min=1), default=None, help="stop at this step")
@click.option("--device", default=None, help="auto | reference | webgpu (default: the run's)")
@click.option("--tier", default=None, help="debug | prod | fast (default: the record's)")
@click.option("--print-every", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "json_", is_flag=True, help="one JSON object per event")
def command(run, store, to_step, device, tier, print_every, json_):
    return resume(run, store, to_step, device, json_, print_every, tier=tier)
