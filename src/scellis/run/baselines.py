"""Naive baselines beside a run's metrics (run layer): is the model any good?

For a forecaster, the same metrics of two forecasts that need no model, on the same
validation windows and in the same units: **persistence** (every horizon step repeats
the window's last value) and **seasonal naive** (each step repeats the value one
season earlier; the season comes from ``eval.season`` or, failing that, from the
training split's autocorrelation). For a character (or token) model, the **unigram**
model fitted on the training targets: its cross-entropy on the validation targets (the
number to beat for ``val_loss``), its perplexity, bits per character and accuracy.
"""

from __future__ import annotations

import math
from collections import Counter

from ..catalog.metrics import make_metric, short_name
from ..data.text import TextDataset


def baselines(ds, specs: list, season: int | None = None) -> dict:
    """``{baseline: {metric: value}}`` for dataset ``ds`` and the record's metric specs."""
    if isinstance(ds, TextDataset):
        return {"unigram": unigram(ds)}
    z = getattr(ds, "target_z", None)
    if z is None or not ds.y_val:
        return {}
    length, horizon = ds.config.length, ds.config.horizon
    ends = [s + length - 1 for s in ds.val_starts]  # each window's last observed row
    out = {"persistence": _score(ds, specs, [[z[e]] * horizon for e in ends])}
    period = season or infer_season(z[: ds.cut])
    if period is not None:
        preds = [[z[e + h - period * ((h - 1) // period + 1)] for h in range(1, horizon + 1)]
                 for e in ends]  # fmt: skip
        out["seasonal_naive"] = _score(ds, specs, preds)
        out["seasonal_naive"]["season"] = period
    return out


def _score(ds, specs, preds) -> dict:
    def units(rows):
        return [[ds.denormalise(v) for v in row] for row in rows]

    scores = {}
    for spec in specs:
        m = make_metric(spec)
        if m.task == "regression":
            m.update(units(preds), units(ds.y_val))
            scores[short_name(spec)] = m.result()
    return scores


def infer_season(values: list[float], longest: int = 400) -> int | None:
    """The lag of the highest autocorrelation after it first turns negative (a cycle's
    length), if that peak is clearly positive; None for a series with no cycle."""
    n = len(values)
    if n < 8:
        return None
    mean = sum(values) / n
    dev = [v - mean for v in values]
    var = sum(d * d for d in dev)
    if var == 0:
        return None

    def acf(lag: int) -> float:
        return sum(dev[i] * dev[i + lag] for i in range(n - lag)) / var

    top = min(longest, n // 3)
    lags = range(1, top + 1)
    r = {lag: acf(lag) for lag in lags}
    first_negative = next((lag for lag in lags if r[lag] < 0), None)
    if first_negative is None:
        return None
    best = max(range(first_negative, top + 1), key=lambda lag: r[lag], default=None)
    return best if best is not None and r[best] > 0.1 else None


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
