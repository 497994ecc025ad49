"""``scellis predict RUN`` (cli layer): a trained forecaster's predictions and forecast.

One row per predicted step over the whole series (``date, actual, predicted, horizon``,
in the data's own units, the datetime column carried through), then ``--horizon N``
recursive steps past its end (dates extended by the series' own step). Written to
``--out FILE`` (CSV) or printed; ``--png FILE`` draws them (matplotlib, the ``plot``
extra), and without it a terminal shows a small text chart.
"""

from __future__ import annotations

import json
from datetime import datetime

import click

from ..base.files import check_output, write_file
from ..base.interrupt import run_until_done
from ..run.reference import open_run
from ..run.use import csv_text, predict_run
from .common import extensions_option, load_cli_extensions, pick_device
from .plot import curves, save_png


@click.command("predict", help="Predictions over a series and a forecast past its end.")
@click.argument("run", metavar="RUN[@STEP|:best]")
@click.option("--store", default=".scellis", show_default=True, help="the store folder")
@click.option("--data", "data", default=None, type=click.Path(dir_okay=False),
              help="another CSV file with the same columns")  # fmt: skip
@click.option("--horizon", type=click.IntRange(min=0), default=0, show_default=True,
              help="steps to forecast past the series' end")  # fmt: skip
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="write CSV here")
@click.option("--png", default=None, type=click.Path(dir_okay=False), help="draw a plot here")
@click.option("--force", is_flag=True, help="replace existing --out / --png files")
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--json", "json_", is_flag=True, help="one JSON object per row")
@extensions_option
def command(run, store, data, horizon, out, png, force, device, json_, extensions):
    load_cli_extensions(extensions)
    for path in (out, png):
        if path is not None:  # a folder, a FIFO, a link or an earlier file: before any work
            check_output(path, replace=force)
    trained = open_run(store, run)
    name, _ = pick_device(device)
    rows = run_until_done(predict_run(trained, data=data, horizon=horizon, device=name))
    if out:
        write_file(out, csv_text(rows).encode(), replace=force)
    if png:
        series = {"actual": [(_x(r["date"]), r["actual"]) for r in rows],
                  "predicted": [(_x(r["date"]), r["predicted"]) for r in rows]}  # fmt: skip
        save_png(png, series, f"{trained.record.get('model')} ({trained.ref})", replace=force)
    if json_:
        for r in rows:
            print(json.dumps(r))
    elif not out:
        print(csv_text(rows), end="")
    else:
        tail = rows[-60:]  # a: actual, b: predicted
        print(curves([[(i, r["actual"]) for i, r in enumerate(tail)],
                      [(i, r["predicted"]) for i, r in enumerate(tail)]]))  # fmt: skip
        print(
            f"a: actual, b: predicted (the last {len(tail)} rows); {len(rows)} rows "
            f"written to {out}"
        )
    return 0


def _x(date):
    """A date column's value as a plot's x (datetimes stay datetimes)."""
    return datetime.fromisoformat(date) if isinstance(date, str) else date
