"""Using a stored run in the tab (webapp layer): what kind of model it is, and a
forecaster's predictions and forecast, by the CLI's own functions (``run.use``).

``predict`` returns the rows ``scellis predict RUN --horizon N`` computes, their CSV
text (the bytes ``--out`` writes) and what the page's chart draws: the validation range
(one step ahead) and the forecast past the series' end, in the data's own units. The
chart alone (``span="chart"``) predicts only from the validation range on: every
window's forward is the cost of a long series on a software GPU (SwiftShader: about
a millisecond or more per window of the starter), and the chart shows the last 20%.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..data.csvsource import SeriesDataset
from ..data.frequency import frequency
from ..data.timestep import time_writer
from ..run.generate import lm_context
from ..run.reference import open_run
from ..run.use import csv_text, predict_run
from . import tab_store
from .commands import command

HORIZON_CAP = 1000  # steps past the end: each is one forward pass of the model


@command(writes_store=False)
def use_info(run: str, store: str = tab_store.ROOT) -> dict:
    """Run ``run``'s checkpoint and what the page may do with it: ``series`` (predict,
    forecast) or ``text`` (generate)."""
    trained = open_run(store, run)
    ds = trained.dataset()
    out = {"run": trained.rid, "step": trained.step, "model": trained.record.get("model")}
    if isinstance(ds, SeriesDataset):
        cfg = ds.config
        return {**out, "kind": "series", "target": cfg.target, "datetime": cfg.datetime,
                "frequency": frequency(ds.times or []),
                "forecasts": list(cfg.features) == [cfg.target]}  # fmt: skip
    context = lm_context(trained.record)
    # a prompt the model can read: the start of its first validation window
    prompt = ds.vocab.decode(ds.x_val[0][: max(1, context // 2)]) if ds.x_val else ""
    return {**out, "kind": "text", "context": context, "prompt": prompt}


@command(writes_store=False)
async def predict(run: str, store: str = tab_store.ROOT, horizon: int = 0,
                  device: str = "webgpu", span: str = "all") -> dict:  # fmt: skip
    """``scellis predict``'s rows of ``run`` with ``horizon`` steps forecast (see the module
    note): {run, step, target, datetime, span, rows, csv, plot}; ``span`` ``chart``: the
    rows from the validation range on, and no CSV."""
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 0:
        raise ScellisError(f"horizon must be a whole number >= 0, got {horizon!r}")
    if span not in ("all", "chart"):
        raise ScellisError(f"span must be all or chart, got {span!r}")
    if horizon > HORIZON_CAP:
        raise ScellisError(f"horizon {horizon} is over the tab's cap of {HORIZON_CAP} steps")
    trained = open_run(store, run)
    ds = trained.dataset()
    since = ds.cut if span == "chart" else 0
    rows = await predict_run(trained, horizon=horizon, device=device, since=since)
    cfg = ds.config
    return {"run": trained.rid, "step": trained.step, "target": cfg.target,
            "datetime": cfg.datetime, "frequency": frequency(ds.times or []), "span": span,
            "rows": rows, "csv": csv_text(rows) if span == "all" else None,
            "plot": _plot_series(ds, rows)}  # fmt: skip


def _plot_series(ds: SeriesDataset, rows: list[dict]) -> dict:
    """The chart's points: the validation range's actual and one-step-ahead predicted
    values ``past`` [[date, actual, predicted]], then the forecast ``future``
    [[date, predicted]] (dates as in the rows: ISO text, else the row number)."""
    times = ds.times
    write = time_writer(times or [])
    validation = {write(times[t]) if times else t for t in range(ds.cut, ds.rows)}
    one_ahead = [r for r in rows if r["actual"] is not None and r["horizon"] == 1]
    past = [[r["date"], r["actual"], r["predicted"]] for r in one_ahead if r["date"] in validation]
    future = [[r["date"], r["predicted"]] for r in rows if r["actual"] is None]
    return {"past": past, "future": future}
