"""``scellis plan FILE`` (cli layer): the memory plan of a record's training step.

Traces the step on the null device (nothing is allocated on a real one) and prints
the verdict, the bytes of each class at the peak, the limits and budget used with
where each number came from, and remediations with their estimated savings.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..base.errors import ScellisError
from ..base.files import read_file
from ..data.record import load_data
from ..devices.adapters import list_adapters
from ..ir.limits import PROFILES, resolve
from ..ir.record import load_record
from ..ir.remedies import apply_edits
from ..run.checks import check_data_fits, locator
from ..run.planning import plan_steps
from .common import extensions_option, load_cli_extensions

DEVICES = ["auto", "webgpu", "reference", "null", *PROFILES]


def target_for(device: str, budget: str | None):
    """``auto``: this machine's WebGPU adapter, else the WebGPU spec's default limits."""
    if device != "auto":
        return resolve(device, budget, adapters=list_adapters)
    try:
        return resolve("webgpu", budget, adapters=list_adapters)
    except ScellisError:
        return resolve("webgpu-spec", budget)


@click.command(
    "plan",
    help="Plan the memory of a record's training step before anything runs. Verdict "
    "green (fits), yellow (fits with warnings: under 15% headroom, or tensors split "
    "across binding windows) or red (refused). Exit status: 0 for green or yellow, "
    "2 for red (and for an invalid record).",
)
@click.argument("file", metavar="FILE")
@click.option(
    "--device",
    type=click.Choice(DEVICES),
    default="auto",
    show_default=True,
    help="whose limits and budget: an adapter, the reference, or a declared profile",
)
@click.option("--budget", default=None, help="memory budget, e.g. 4GiB (default: detected)")
@click.option("--batch", type=int, default=None, help="batch size (default: the record's)")
@click.option(
    "--mode", type=click.Choice(["training", "inference"]), default="training", show_default=True
)
@click.option("--precision", type=click.Choice(["f32", "mixed_f16"]), default=None)
@click.option(
    "--replay/--no-replay",
    default=True,
    show_default=True,
    help="plan the run as train does by default (replayed steps on WebGPU) or with eager steps",
)
@click.option(
    "--validate/--no-validate",
    default=True,
    show_default=True,
    help="plan the run's validation forward beside the step, as train does by default",
)
@extensions_option
@click.option("--json", "json_", is_flag=True, help="the plan as one JSON object")
def command(file, device, budget, batch, mode, precision, replay, validate, json_, extensions):
    load_cli_extensions(extensions)
    record = load_record(file)
    data_note = check_data(file, record)
    target = target_for(device, budget)
    # --batch and --precision edit the record, as ``train --set`` does, so the plan's
    # remediations are planned from the record this plan is of
    record = apply_edits(record, overrides(batch, precision))
    # the loop's own update and evaluation batch, as ``scellis train`` and the tab plan
    plan, _ = plan_steps(record, target, mode=mode, replay=replay, validate=validate)
    if json_:
        print(json.dumps(plan.record()))
    else:
        print(f"scellis plan {file}: {record.get('model')} on {target.adapter or target.device}")
        print(plan.text(), end="")
        if data_note:
            print(f"  note: {data_note}")
    return 2 if plan.verdict == "red" else 0


def overrides(batch: int | None, precision: str | None) -> dict:
    if batch is not None and batch < 1:
        raise ScellisError(f"--batch must be >= 1, got {batch}")
    edits = {} if batch is None else {"batch_size": batch}
    return edits if precision is None else {**edits, "precision": precision}


def check_data(file: str, record: dict) -> str:
    """Refuse a record its own data does not fit (a window, a vocabulary), as ``train``
    would before step 0; a note when the data cannot be read to check (planning needs
    no data)."""
    if not isinstance(record.get("data"), dict):
        return ""
    try:
        dataset = load_data(record["data"], base_dir=Path(file).parent)
    except ScellisError as e:
        return f"the record's data was not checked against its inputs ({e})"
    check_data_fits(record, dataset, locator(read_file(file), file))
    return ""
