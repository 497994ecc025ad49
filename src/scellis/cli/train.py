"""``scellis train FILE|MODEL_ID`` (cli layer): run a record's pipeline, recorded in a store.

Validates the record (exit 2 with ``file:line:col`` messages if it is not valid),
builds the model, data, optimizer, scheduler and loss it names, registers a run in the
store (default ``./.scellis``) with a copy of the data file its record names (by
sha256: a resume reads it, and the run's bundle carries it), and trains: per-step
metrics and heartbeats go to the records, a checkpoint every ``--checkpoint-every``
steps and at the end. A progress bar on a terminal, plain lines otherwise, one JSON
object per event with ``--json``.
Ctrl-C stops at the next step boundary after saving a checkpoint (exit 130) and prints
the command that resumes the run.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from ..store.objects import ObjectStore
from ..store.records import Records
from ..train.recording import keep_data_files, new_run
from .runner import Output, Plan, drive, prepare, resolve_record


def start(ref, device, store, epochs, max_steps, log_every, print_every, checkpoint_every,
          keep_last, json_, argv, fault=None, writer=None, budget=None,
          keep_best=True, replay=False) -> int:  # fmt: skip
    root = Path(store)
    raw, label, base_dir = resolve_record(ref, root)
    s = prepare(raw, label, base_dir, device, budget, store=root, epochs=epochs)
    if replay:
        s.fit_kwargs["replay"] = True  # bitwise equal to eager; falls back per step
    epochs = s.epochs
    plan = Plan(
        epochs=epochs, max_steps=max_steps, log_every=log_every,
        checkpoint_every=checkpoint_every, keep_last=keep_last, keep_best=keep_best,
    )  # fmt: skip
    objects, records = ObjectStore(root), Records(root)
    try:
        records.add_dataset(s.digest, str(s.record["data"].get("source")), s.rows)
        # the user's data file is kept with the run (by hash): a resume, here after the
        # file moved or in a tab from the run's bundle, reads that copy
        files = keep_data_files(objects, s.record, base_dir)
        extra = {"files": files} if files else None
        rid, record_hash = new_run(objects, records, raw, s, asdict(plan), argv=argv,
                                   base_dir=base_dir, extra=extra)  # fmt: skip
    finally:
        records.close()
    total = len(s.train) * epochs
    total = min(total, max_steps) if max_steps is not None else total
    out = Output(json_, print_every, total)
    out.info(
        f"scellis train {label}: {s.record.get('model')} on {s.device.name}"
        + (f" ({s.why})" if s.why else "")
        + f", {epochs} epochs, {s.tier} tier, dataset {s.digest[:12]}, run {rid} in {root}",
        run=rid, dataset=s.digest, device=s.device.name, store=str(root),
    )  # fmt: skip
    return drive(s, plan, root, rid, record_hash, out, fault=fault, writer=writer)


@click.command(
    "train", help="Train the pipeline an SML record (a file or a stored model id) carries."
)
@click.argument("file", metavar="FILE|MODEL_ID")
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--epochs", type=int, default=None, help="override the record's epochs")
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="stop after this many steps"
)
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="steps between checkpoints (one is always written at the end)",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="checkpoints kept per run (the best one is kept too)",
)
@click.option(
    "--log-every",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="steps between recorded metrics (1: every step)",
)
@click.option(
    "--print-every",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="steps between printed lines when not on a terminal",
)
@click.option(
    "--keep-best/--no-keep-best", default=True, show_default=True,
    help="also keep the checkpoint with the lowest validation (else training) loss",
)  # fmt: skip
@click.option("--budget", default=None, help="memory budget for the plan, e.g. 4GiB")
@click.option(
    "--replay", is_flag=True, help="replay the recorded step's dispatches (WebGPU; same results)"
)
@click.option("--json", "json_", is_flag=True, help="one JSON object per event")
def command(file, device, store, epochs, max_steps, checkpoint_every, keep_last, log_every,
            print_every, keep_best, budget, replay, json_):  # fmt: skip
    return start(
        file, device, store, epochs, max_steps, log_every, print_every, checkpoint_every,
        keep_last, json_, argv=_argv(), budget=budget, replay=replay, keep_best=keep_best,
    )  # fmt: skip


def _argv() -> list[str]:
    """The command as typed, rebuilt from click's parsed parameters."""
    ctx = click.get_current_context()
    out = [*ctx.command_path.split(), str(ctx.params["file"])]
    for k, v in ctx.params.items():
        if k == "keep_best":
            out.append("--keep-best" if v else "--no-keep-best")
            continue
        if k == "file" or v is None or v is False:
            continue
        flag = "--" + k.rstrip("_").replace("_", "-")
        out += [flag] if v is True else [flag, str(v)]
    return out
