"""Naive baselines beside a run's metrics (run layer): is the model any good?

For a forecaster, the same metrics of two forecasts that need no model, on the same
validation windows and in the data's own units: **persistence** (every horizon step
repeats the window's last value) and **seasonal naive** (each step repeats the value
one season earlier). The season comes from ``eval.season``, else from ``data.season``
(a seasonal-difference record's own), else from the dates (a
weekly series has 52, a monthly one 12: ``data.frequency``), else from the training
split's autocorrelation (of its values, then of its changes, which a trend hides the
cycle from). Each baseline also keeps its in-sample MAE (its one-step error over the
training rows: the scale of MASE) and persistence the share of validation values
outside the training range (what a globally scaled network never saw). For a
character (or token) model, the **unigram** model fitted on the training targets: its
cross-entropy on the validation targets (the number to beat for ``val_loss``), its
perplexity, bits per character and accuracy.
"""

from __future__ import annotations

import math
from collections import Counter

from ..catalog.metrics import make_metric, short_name
from ..data.season import (  # noqa: F401 (infer_season: its home once)
    detect_season,
    infer_season,
    naive_mae,
)
from ..data.text import TextDataset


def baselines(ds, specs: list, season: int | None = None) -> dict:
    """``{baseline: {metric: value}}`` for dataset ``ds`` and the record's metric specs
    (MAE always: the verdict reads it)."""
    if isinstance(ds, TextDataset):
        return {"unigram": unigram(ds)}
    values = series_values(ds)
    if values is None or not ds.y_val:
        return {}
    specs = list(specs) + ([] if "mae" in map(short_name, specs) else ["mae"])
    length, horizon = ds.config.length, ds.config.horizon
    ends = [s + length - 1 for s in ds.val_starts]  # each window's last observed row
    actual = [values[e + 1 : e + 1 + horizon] for e in ends]
    train = values[: ds.cut]
    out = {"persistence": _score(specs, [[values[e]] * horizon for e in ends], actual)}
    # what the verdict needs to name a cause: the range, the normalisation, the window
    out["persistence"].update(in_sample_mae=naive_mae(train, 1),
                              val_outside_train=_outside(train, values[ds.cut :]),
                              normalise=ds.config.normalise, window=length)  # fmt: skip
    period = season_of(ds, season)
    if period is not None:
        preds = [[values[e + h - period * ((h - 1) // period + 1)] for h in range(1, horizon + 1)]
                 for e in ends]  # fmt: skip
        out["seasonal_naive"] = _score(specs, preds, actual)
        out["seasonal_naive"].update(season=period, in_sample_mae=naive_mae(train, period))
    return out


def series_values(ds) -> list | None:
    """The target column in the data's own units (None: a dataset without one)."""
    values = getattr(ds, "target_values", None)
    if values is None and getattr(ds, "target_z", None) is not None:
        values = [ds.denormalise(v) for v in ds.target_z]
    return values


def season_of(ds, season: int | None = None) -> int | None:
    """The season of ``ds``'s target (see the module note); None when none shows, or
    when the training rows do not hold one whole season to repeat."""
    train = (series_values(ds) or [])[: ds.cut]
    season = season if season is not None else getattr(ds.config, "season", None)
    return season if season is not None and 1 < season < ds.cut else detect_season(
        train, getattr(ds, "times", None))  # fmt: skip


def _outside(train: list[float], later: list[float]) -> float | None:
    if not train or not later:  # another file is all validation: no range to leave
        return None
    lo, hi = min(train), max(train)
    return sum(not lo <= v <= hi for v in later) / len(later)


def _score(specs, preds, actual) -> dict:
    scores = {}
    for spec in specs:
        m = make_metric(spec)
        if m.task == "regression":
            m.update(preds, actual)
            scores[short_name(spec)] = m.result()
    return scores


def unigram(ds: TextDataset) -> dict:
    """The unigram model of the training targets, scored on the validation targets."""
    train = Counter(int(c) for row in ds.y_train for c in row)
    val = [int(c) for row in ds.y_val for c in row]
    vocab = len(ds.vocab)
    total = sum(train.values()) + vocab  # add-one smoothing: no class has probability 0
    ce = -sum(math.log((train[c] + 1) / total) for c in val) / max(len(val), 1)
    top = train.most_common(1)[0][0] if train else 0
    return {
        "val_loss": ce,
        "perplexity": math.exp(ce),
        "bits_per_char": ce / math.log(2.0),
        "accuracy": sum(c == top for c in val) / max(len(val), 1),
    }
