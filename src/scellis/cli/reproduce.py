"""``scellis reproduce LINK [--data FILE]`` (cli layer): run a shared run again here.

Trains the link's record with its seed and tier for the steps the link has losses for,
on the data file given (its hash must be the link's), records the run in the store, and
says whether every loss matched bit for bit. Exit 0 either way: a difference is a
finding, not an error (``--json`` carries it for scripts).
"""

from __future__ import annotations

import json

import click

from ..run.reproduce import reproduce
from ..run.share import read_link
from .common import pick_device


@click.command("reproduce", help="Reproduce a run from its link (scellis share RUN) and "
               "check its losses bit for bit.")  # fmt: skip
@click.argument("link", metavar="LINK")
@click.option("--data", metavar="FILE", help="the data file the run trained on (unless bundled)")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option(
    "--device", default=None,
    help="reference | webgpu | auto (default: the device the link's run used)",
)  # fmt: skip
@click.option("--json", "json_", is_flag=True, help="machine-readable output")
def command(link, data, store, device, json_):
    shared = read_link(link)
    name, _ = pick_device(device or shared.device or "auto")
    out = reproduce(shared, data, store=store, device=name)
    if json_:
        print(json.dumps(out))
        return 0
    what = f"run {out['of']}" if out["of"] else "the shared run"
    if out["bitwise"]:
        print(f"reproduced {what} as run {out['run']}: all {out['steps']} losses match bit for "
              f"bit ({out['tier']} tier, {name})")  # fmt: skip
    else:
        # bit for bit is promised on debug, on the device the run used
        other = shared.device not in (None, name)
        elsewhere = f", the link ran on {shared.device}" if other else ""
        worst = out["max_relative_difference"]
        print(f"reproduced {what} as run {out['run']}: losses differ from step "
              f"{out['first_difference']} (largest relative difference {worst:.3g}; "
              f"{out['tier']} tier, {name}{elsewhere})")  # fmt: skip
    return 0
