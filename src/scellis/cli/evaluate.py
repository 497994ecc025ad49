"""``scellis evaluate RUN`` (cli layer): a trained run's metrics beside naive baselines.

``RUN`` is a run id (``RUN@STEP`` or ``RUN:best`` for another checkpoint). The metrics
are the record's ``eval.metrics`` (the usual ones for its task otherwise), on its
validation split or on ``--data FILE`` (the same columns, windowed with the run's own
normalisation), in the data's own units.
"""

from __future__ import annotations

import json

import click

from ..base.interrupt import run_until_done
from ..run.reference import open_run
from ..run.use import evaluate_run
from .common import extensions_option, load_cli_extensions, pick_device


def _g(v) -> str:
    return "n/a" if v is None else f"{v:.4g}"


@click.command("evaluate", help="A trained run's metrics on its validation data or a file.")
@click.argument("run", metavar="RUN[@STEP|:best]")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--data", "data", default=None, type=click.Path(dir_okay=False),
              help="another CSV file with the same columns")  # fmt: skip
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--json", "json_", is_flag=True, help="one JSON object")
@extensions_option
def command(run, store, data, device, json_, extensions):
    load_cli_extensions(extensions)
    trained = open_run(store, run)
    name, _ = pick_device(device)
    got = run_until_done(evaluate_run(trained, data=data, device=name))
    if json_:
        print(json.dumps(got))
        return 0
    print(f"run {got['run']} at step {got['step']}, {got['windows']} windows of {got['data']}")
    print(f"  val_loss  {_g(got['val_loss'])}")
    for metric, value in got["metrics"].items():
        beside = [f"{b.replace('_', ' ')} {_g(v[metric])}" for b, v in got["baselines"].items()
                  if v.get(metric) is not None]  # fmt: skip
        print(f"  {metric:9} {_g(value)}" + (f"   ({', '.join(beside)})" if beside else ""))
    if got.get("verdict"):
        print(f"  verdict: {got['verdict']['text']}")
    return 0
