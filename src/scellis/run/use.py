"""Using a trained run (run layer): its metrics on data, and its predictions and forecasts.

``evaluate_run`` scores a run's checkpoint on its validation split, or on another file
with the same columns (windowed with the run's own normalisation), with the record's
``eval.metrics`` (or the usual ones for its task) beside the naive baselines and the
verdict (``verdict.py``).
``predict_run`` gives one-step (or one-horizon) predictions over a whole series and a
recursive forecast beyond its end (``data.horizon`` steps per forward: a model trained
on several steps forecasts them directly), in the data's own units, with the datetime
column carried through and extended by the series' own step (``data.timestep``: whole
calendar months or years, month ends kept, when its times are; else the median gap).
"""

from __future__ import annotations

import dataclasses

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..data.csvsource import SeriesDataset, load_csv
from ..data.frames import framed_window
from ..data.text import TextDataset
from ..data.timestep import time_after, time_writer
from ..ir.compiled import forward_for
from ..model.build import entry_object
from ..runtime.creation import tensor
from ..train.data import Batches
from ..train.evaluation import validation_pass
from .baselines import baselines
from .planning import eval_batch_of
from .prepare import metric_set
from .reference import TrainedRun
from .verdict import verdict

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


async def evaluate_run(run: TrainedRun, *, data=None, device="reference",
                       tier: str | None = None) -> dict:  # fmt: skip
    """The metrics of ``run``'s checkpoint (see the module note); under ``tier`` (default:
    the run's own), fast's forward is the fused one."""
    ds = run_dataset(run, data)
    task = "classification" if isinstance(ds, TextDataset) else "regression"
    specs = (run.record.get("eval") or {}).get("metrics") or DEFAULT_METRICS[task]
    model = run.model(device)
    batches = Batches(ds.x_val, ds.y_val, eval_batch_of(run.record), shuffle=False,
                      device=model_device(model))  # fmt: skip
    loss = entry_object(run.record["loss"], "loss")
    fwd = forward_for(run.record, model, tier)
    val, metrics = await validation_pass(model, loss, batches, metrics=metric_set(specs, ds),
                                         forward=fwd)  # fmt: skip
    season = (run.record.get("eval") or {}).get("season")
    naive = baselines(ds, specs, season)
    return {
        "run": run.rid, "step": run.step, "data": str(data) if data else "validation split",
        "windows": len(ds.x_val), "val_loss": val, "metrics": metrics,
        "baselines": naive, "verdict": verdict(metrics, naive),
    }  # fmt: skip


def model_device(model):
    return next(iter(model.parameters())).device


async def _forward(model, rows: list, fwd=None) -> list:
    # no_grad is process-wide: it must not span an await, or a training step that runs
    # meanwhile (a tab's run beside a forecast) would record no graph
    with no_grad():
        pred = (fwd or model)(tensor(rows, device=model_device(model)))
    out = await pred.read()
    return [r if isinstance(r, list) else [r] for r in out]


async def predict_run(run: TrainedRun, *, data=None, horizon: int = 0, device="reference",
                      batch: int = 256, tier: str | None = None,
                      since: int = 0) -> list[dict]:  # fmt: skip
    """Rows ``{date, actual, predicted, horizon}`` over the series (every window, one
    per row step; with ``since``, only the windows whose first predicted row is at or
    after row ``since``) and ``horizon`` recursive steps past its end (``actual`` None);
    under ``tier`` (default: the run's own), fast's forward is the fused one. Windows go
    through the forward in equal chunks of at most ``batch``, a short last one padded:
    one input shape, so a GPU compiles its kernels once (seconds on a software GPU)."""
    ds = run_dataset(run, data)
    if not isinstance(ds, SeriesDataset):
        raise ScellisError("predict is for series models; use generate for a text model")
    cfg = ds.config
    model = run.model(device)
    fwd = forward_for(run.record, model, tier)
    starts = list(range(max(since - cfg.length, 0), ds.rows - cfg.length + 1))
    rows_out: list[dict] = []
    write = time_writer(ds.times or [])
    cut = _cut_windows(ds)
    size = -(-len(starts) // -(-len(starts) // batch)) if starts else batch
    for lo in range(0, len(starts), size):
        chunk = starts[lo : lo + size]
        inputs, frames = _windows(ds, chunk, cut)
        # a short chunk repeats its last window up to the chunk size; those rows go unread
        preds = await _forward(model, inputs + inputs[-1:] * (size - len(inputs)), fwd)
        for s, pred, frame in zip(chunk, preds, frames):
            for k, value in enumerate(pred):
                t = s + cfg.length + k
                if t < ds.rows:
                    predicted = ds.denormalise(value, frame=frame, step=k)
                    rows_out.append(_row(ds, t, _actual(ds, t), predicted, k, write))
    if horizon > 0:
        forecast = _forecast_framed if ds.framed else _forecast
        rows_out += await forecast(ds, model, horizon, fwd)
    return rows_out


def _windows(ds: SeriesDataset, starts: list[int], cut: dict | None = None) -> tuple[list, list]:
    """The model's inputs of the windows at ``starts`` and each one's frame (None: the
    global statistics), as training cut them; ``cut`` (``_cut_windows``) holds those
    the dataset already framed."""
    cfg = ds.config
    if not ds.framed:
        feats = _features(ds)
        return [feats[s : s + cfg.length] for s in starts], [None] * len(starts)
    cut = cut or {}
    got = [cut.get(s) or framed_window(ds.columns, cfg.features, cfg.target, s, cfg.length, 0,
                                       cfg.normalise, ds.stats, cfg.season)[::2]
           for s in starts]  # fmt: skip
    return [g[0] for g in got], [g[1] for g in got]


def _cut_windows(ds: SeriesDataset) -> dict:
    """``{start: (inputs, frame)}`` of the windows the dataset framed for training and
    validation: a window's inputs and frame depend on its start alone, so predictions
    over the series reuse them (in the browser, framing every window again in Python
    took seconds) and frame only the few windows no split holds."""
    if not ds.framed:
        return {}
    pairs = zip(ds.train_starts + ds.val_starts, ds.x_train + ds.x_val,
                ds.train_frames + ds.val_frames)  # fmt: skip
    return {s: (x, f) for s, x, f in pairs}


def _actual(ds: SeriesDataset, t: int) -> float:
    """Row ``t``'s target as the file has it (13.9, not 13.899999999999999 back from z)."""
    if ds.target_values is not None:
        return float(ds.target_values[t])
    return ds.denormalise(ds.target_z[t])


def _features(ds: SeriesDataset) -> list:
    """Every row's normalised features, the last rows too (which are only ever targets
    in training windows, yet are the inputs of the latest predictions)."""
    return [list(f) for f in ds.features_z]


def _check_recursive(cfg) -> None:
    if list(cfg.features) != [cfg.target]:
        raise ScellisError(
            f"a recursive forecast needs the future of every input; this model reads "
            f"{', '.join(cfg.features)} to predict {cfg.target} (predictions over the series "
            "itself need none: --horizon 0, or predict() in Python)"
        )


async def _forecast(ds: SeriesDataset, model, horizon: int, fwd=None) -> list[dict]:
    cfg = ds.config
    _check_recursive(cfg)
    window = [list(f) for f in _features(ds)[-cfg.length :]]
    out: list[dict] = []
    while len(out) < horizon:
        # a model trained on data.horizon steps gives them all at once: each forward
        # forecasts that many, and the window moves on by them
        (pred,) = await _forward(model, [window], fwd)
        for value in pred[: horizon - len(out)]:
            k = len(out) + 1
            out.append({"date": _future_date(ds, k), "actual": None,
                        "predicted": ds.denormalise(value), "horizon": k})  # fmt: skip
            window = window[1:] + [[value]]
    return out


async def _forecast_framed(ds: SeriesDataset, model, horizon: int, fwd=None) -> list[dict]:
    """The recursive forecast of a per-window mode: the window is kept in the data's
    units and each forward's frame read from it, as training did."""
    cfg = ds.config
    _check_recursive(cfg)
    past = list(ds.columns[cfg.target][-cfg.length :])
    out: list[dict] = []
    while len(out) < horizon:
        x, _, frame = framed_window({cfg.target: past}, [cfg.target], cfg.target, 0,
                                    cfg.length, 0, cfg.normalise, ds.stats,
                                    cfg.season)  # fmt: skip
        (pred,) = await _forward(model, [x], fwd)
        for step, value in enumerate(pred[: horizon - len(out)]):
            k = len(out) + 1
            predicted = ds.denormalise(value, frame=frame, step=step)
            out.append({"date": _future_date(ds, k), "actual": None,
                        "predicted": predicted, "horizon": k})  # fmt: skip
            past = past[1:] + [predicted]
    return out


def _row(ds, t: int, actual: float, predicted: float, k: int, write) -> dict:
    times = ds.times
    return {"date": write(times[t]) if times else t, "actual": actual,
            "predicted": predicted, "horizon": k + 1}  # fmt: skip


def _future_date(ds: SeriesDataset, ahead: int):
    times = ds.times
    if not times:
        return ds.rows - 1 + ahead  # the row number the step would have
    if len(times) < 2:
        raise ScellisError("the datetime column needs two rows to tell the series' step")
    return time_writer(times)(time_after(times, ahead))


def csv_text(rows: list[dict]) -> str:
    """The predictions as CSV: date, actual, predicted, horizon."""
    lines = ["date,actual,predicted,horizon"]
    for r in rows:
        actual = "" if r["actual"] is None else repr(float(r["actual"]))
        lines.append(f"{r['date']},{actual},{float(r['predicted'])!r},{r['horizon']}")
    return "\n".join(lines) + "\n"
