"""``scellis train FILE`` (cli layer): run the training pipeline an SML record carries.

Validates the record (exit 2 with ``file:line:col`` messages if it is not valid),
builds the model from the catalog, loads the record's data, and trains with the
record's optimizer, scheduler, loss, clipping, precision, tier and seed. Progress is
one line per log point (``--json``: one JSON object per event); Ctrl-C stops cleanly.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import click

from ..base.errors import ScellisError
from ..base.rng import Generator
from ..catalog.registry import lookup
from ..catalog.sml_registry import catalog_registry
from ..data.record import load_data
from ..devices.base import get_device
from ..ir.limits import target_of_device
from ..ir.plan import plan_or_refuse
from ..model.build import RecordModel, config_of
from ..sml import parse
from ..train import Batches
from ..train import run as run_training
from .common import pick_device
from .planning import loop_update
from .validate import check_file


def _entry_obj(section: dict, kind: str, where: str, *args):
    entry = lookup(section.get("block_id", ""), kind)
    cfg = config_of(entry, section, where)
    return entry.impl(*args, config=cfg) if args else entry.impl(config=cfg)


def _print_event(ev: dict) -> None:
    kind = ev["kind"]
    if kind == "log" and ev.get("loss") is not None:
        print(
            f"  step {ev['step']:6d}  epoch {ev['epoch']:3d}  loss {ev['loss']:.4f}  "
            f"lr {ev['lr']:.3g}  {ev['throughput']:.0f} samples/s",
            flush=True,
        )
    elif kind == "eval":
        print(f"  eval  step {ev['step']:6d}  val_loss {ev['val_loss']:.4f}", flush=True)
    elif kind == "warning":
        print(f"  warning: {ev.get('message', ev)}", flush=True)


def run(args) -> int:
    problems = check_file(args.file, catalog_registry())
    if problems:
        for d in problems:
            print(str(d), file=sys.stderr)
        return 2
    record = parse(Path(args.file).read_bytes(), args.file).data
    device, why = pick_device(args.device)
    dev = get_device(device)
    seed = int(record.get("seed", 0))
    # the memory plan traces on the null device: a red plan refuses before any allocation
    eval_batch = int((record.get("eval") or {}).get("batch_size", 64))
    plan_or_refuse(
        record, target_of_device(dev, args.budget), update=loop_update, eval_batch=eval_batch
    )
    model = RecordModel(record, device=dev, gen=Generator(seed, "init"))
    if "data" not in record:
        raise ScellisError(f"{args.file}: the record has no data section to train on")
    ds = load_data(record["data"], base_dir=Path(args.file).parent)
    batch = int(record.get("batch_size", 32))
    optimizer = _entry_obj(record["optimizer"], "optimizer", "optimizer", model)
    loss = _entry_obj(record["loss"], "loss", "loss")
    scheduler = None
    if record.get("scheduler"):
        scheduler = _entry_obj(record["scheduler"], "scheduler", "scheduler", optimizer)
    ev_cfg = record.get("eval") or {}
    epochs = int(args.epochs if args.epochs is not None else record.get("epochs", 1))
    info = (
        f"scellis train {args.file}: {record.get('model')} on {dev.name}"
        + (f" ({why})" if why else "")
        + f", {epochs} epochs, dataset {ds.digest[:12]}"
    )
    emit = (
        (lambda ev: print(json.dumps(ev, default=str), flush=True)) if args.json else _print_event
    )
    if args.json:
        print(json.dumps({"kind": "info", "message": info, "dataset": ds.digest}), flush=True)
    else:
        print(info, flush=True)
    try:
        summary = run_training(
            model,
            loss,
            optimizer,
            Batches(ds.x_train, ds.y_train, batch, device=dev),
            epochs=epochs,
            max_steps=args.max_steps,
            determinism_tier=record.get("determinism_tier"),
            seed=seed,
            scheduler=scheduler,
            val_data=Batches(
                ds.x_val, ds.y_val, int(ev_cfg.get("batch_size", 64)), shuffle=False, device=dev
            ),
            grad_clip=record.get("grad_clip"),
            precision=record.get("precision"),
            log_every=args.log_every,
            on_event=emit,
        )
    except KeyboardInterrupt:
        print("scellis train: interrupted; no checkpoint store yet, nothing saved", file=sys.stderr)
        return 130
    if not args.json:
        print(
            f"done: {summary['steps']} steps in {summary['wall_s']:.1f}s, loss "
            f"{summary['loss']:.4f}, val_loss {summary.get('val_loss') or float('nan'):.4f}"
        )
    return 0


@click.command("train", help="Train the pipeline an SML record carries.")
@click.argument("file", metavar="FILE")
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--epochs", type=int, default=None, help="override the record's epochs")
@click.option("--max-steps", type=int, default=None, help="stop after this many steps")
@click.option(
    "--log-every", type=int, default=20, show_default=True, help="steps between log lines"
)
@click.option("--budget", default=None, help="memory budget for the plan, e.g. 4GiB")
@click.option("--json", "json_", is_flag=True, help="one JSON object per event")
def command(file, device, epochs, max_steps, log_every, budget, json_):
    return run(
        SimpleNamespace(
            file=file,
            device=device,
            epochs=epochs,
            max_steps=max_steps,
            log_every=log_every,
            budget=budget,
            json=json_,
        )
    )
