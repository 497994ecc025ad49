"""Using a trained run (run layer): its metrics on data, and its predictions and forecasts.

``evaluate_run`` scores a run's checkpoint on its validation split, or on another file
with the same columns (windowed with the run's own normalisation), with the record's
``eval.metrics`` (or the usual ones for its task) beside the naive baselines.
``predict_run`` gives one-step (or one-horizon) predictions over a whole series and a
recursive forecast beyond its end, in the data's own units, with the datetime column
carried through and extended by the series' own step (whole calendar months or
years, month ends kept, when its times are; else the median gap).
"""

from __future__ import annotations

import calendar
import dataclasses
from datetime import datetime

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..data.csvsource import SeriesDataset, load_csv
from ..data.text import TextDataset
from ..model.build import entry_object
from ..runtime.creation import tensor
from ..train.data import Batches
from ..train.evaluation import validation_pass
from .baselines import baselines
from .planning import eval_batch_of
from .prepare import metric_set
from .reference import TrainedRun

DEFAULT_METRICS = {"regression": ["mae", "rmse", "smape"],
                   "classification": ["accuracy", "perplexity", "bits_per_char"]}  # fmt: skip


def run_dataset(run: TrainedRun, data=None):
    """The run's dataset, or ``data`` (a CSV file) windowed with the run's statistics."""
    own = run.dataset()
    if data is None:
        return own
    if not isinstance(own, SeriesDataset):
        raise ScellisError("--data takes a CSV file for a series model; this run is a text model")
    return load_csv(dataclasses.replace(own.config, path=str(data)), stats=own.stats)


async def evaluate_run(run: TrainedRun, *, data=None, device="reference") -> dict:
    """The metrics of ``run``'s checkpoint (see the module note)."""
    ds = run_dataset(run, data)
    task = "classification" if isinstance(ds, TextDataset) else "regression"
    specs = (run.record.get("eval") or {}).get("metrics") or DEFAULT_METRICS[task]
    model = run.model(device)
    batches = Batches(ds.x_val, ds.y_val, eval_batch_of(run.record), shuffle=False,
                      device=model_device(model))  # fmt: skip
    loss = entry_object(run.record["loss"], "loss")
    val, metrics = await validation_pass(model, loss, batches, metrics=metric_set(specs, ds))
    season = (run.record.get("eval") or {}).get("season")
    return {
        "run": run.rid, "step": run.step, "data": str(data) if data else "validation split",
        "windows": len(ds.x_val), "val_loss": val, "metrics": metrics,
        "baselines": baselines(ds, specs, season),
    }  # fmt: skip


def model_device(model):
    return next(iter(model.parameters())).device


async def _forward(model, rows: list) -> list:
    # no_grad is process-wide: it must not span an await, or a training step that runs
    # meanwhile (a tab's run beside a forecast) would record no graph
    with no_grad():
        pred = model(tensor(rows, device=model_device(model)))
    out = await pred.read()
    return [r if isinstance(r, list) else [r] for r in out]


async def predict_run(run: TrainedRun, *, data=None, horizon: int = 0, device="reference",
                      batch: int = 256) -> list[dict]:  # fmt: skip
    """Rows ``{date, actual, predicted, horizon}`` over the series (every window, one
    per row step) and ``horizon`` recursive steps past its end (``actual`` None)."""
    ds = run_dataset(run, data)
    if not isinstance(ds, SeriesDataset):
        raise ScellisError("predict is for series models; use generate for a text model")
    cfg = ds.config
    model = run.model(device)
    starts = list(range(0, ds.rows - cfg.length + 1))
    feats = _features(ds)
    rows_out: list[dict] = []
    for lo in range(0, len(starts), batch):
        chunk = starts[lo : lo + batch]
        preds = await _forward(model, [feats[s : s + cfg.length] for s in chunk])
        for s, pred in zip(chunk, preds):
            for k, value in enumerate(pred):
                t = s + cfg.length + k
                if t < ds.rows:
                    rows_out.append(_row(ds, t, _actual(ds, t), ds.denormalise(value), k))
    if horizon > 0:
        rows_out += await _forecast(ds, model, feats, horizon)
    return rows_out


def _actual(ds: SeriesDataset, t: int) -> float:
    """Row ``t``'s target as the file has it (13.9, not 13.899999999999999 back from z)."""
    if ds.target_values is not None:
        return float(ds.target_values[t])
    return ds.denormalise(ds.target_z[t])


def _features(ds: SeriesDataset) -> list:
    """Every row's normalised features (the series the windows were cut from)."""
    rows = [None] * ds.rows
    for x, s in zip(ds.x_train + ds.x_val, ds.train_starts + ds.val_starts):
        for i, f in enumerate(x):
            rows[s + i] = f
    missing = [i for i, r in enumerate(rows) if r is None]
    if missing:  # rows no window covers (a stride > 1): the target alone can fill them
        if list(ds.config.features) != [ds.config.target]:
            raise ScellisError("this series' stride leaves rows out of every window")
        for i in missing:
            rows[i] = [ds.target_z[i]]
    return rows


async def _forecast(ds: SeriesDataset, model, feats: list, horizon: int) -> list[dict]:
    cfg = ds.config
    if list(cfg.features) != [cfg.target]:
        raise ScellisError(
            f"a recursive forecast needs the future of every input; this model reads "
            f"{', '.join(cfg.features)} to predict {cfg.target} (--horizon 0 predicts the "
            "series only)"
        )
    window = [list(f) for f in feats[-cfg.length :]]
    out = []
    for k in range(horizon):
        (pred,) = await _forward(model, [window])
        value = pred[0]
        out.append({"date": _future_date(ds, k + 1), "actual": None,
                    "predicted": ds.denormalise(value), "horizon": k + 1})  # fmt: skip
        window = window[1:] + [[value]]
    return out


def _row(ds, t: int, actual: float, predicted: float, k: int) -> dict:
    times = ds.times
    return {"date": times[t].isoformat() if times else t, "actual": actual,
            "predicted": predicted, "horizon": k + 1}  # fmt: skip


def _future_date(ds: SeriesDataset, ahead: int):
    times = ds.times
    if not times:
        return ds.rows - 1 + ahead  # the row number the step would have
    if len(times) < 2:
        raise ScellisError("the datetime column needs two rows to tell the series' step")
    last: datetime = times[-1]
    months, month_ends = _month_step(times[-20:])
    if months:  # years and months have no fixed length: step the calendar
        return _add_months(last, months * ahead, month_ends).isoformat()
    steps = sorted((b - a) for a, b in zip(times[-20:], times[-19:]))
    step = steps[len(steps) // 2]  # the median step: a gap or two do not move it
    return (last + step * ahead).isoformat()


def _month_end(t: datetime) -> int:
    return calendar.monthrange(t.year, t.month)[1]


def _month_step(times: list) -> tuple[int, bool]:
    """(the series' step in whole calendar months: 12 for a yearly one, else 0; whether
    its times are months' last days). A step in months needs one time of day and one day
    of the month (or each month's last day), a fixed number of months apart."""
    index = [t.year * 12 + t.month for t in times]
    gaps = {b - a for a, b in zip(index, index[1:])}
    ends = all(t.day == _month_end(t) for t in times) and len({t.day for t in times}) > 1
    one_day = len({t.day for t in times}) == 1 or ends
    regular = one_day and len({t.time() for t in times}) == 1 and len(gaps) == 1
    return (gaps.pop() if regular and min(gaps) > 0 else 0), ends


def _add_months(t: datetime, months: int, month_end: bool = False) -> datetime:
    year, month = divmod(t.year * 12 + t.month - 1 + months, 12)
    last = calendar.monthrange(year, month + 1)[1]
    day = last if month_end else min(t.day, last)  # the 31st of a 30-day month: the 30th
    return t.replace(year=year, month=month + 1, day=day)


def csv_text(rows: list[dict]) -> str:
    """The predictions as CSV: date, actual, predicted, horizon."""
    lines = ["date,actual,predicted,horizon"]
    for r in rows:
        actual = "" if r["actual"] is None else repr(float(r["actual"]))
        lines.append(f"{r['date']},{actual},{float(r['predicted'])!r},{r['horizon']}")
    return "\n".join(lines) + "\n"
