"""Evaluation metrics (catalog layer): a catalog kind, extensible like blocks.

A record names them in ``eval.metrics`` (``[mae, rmse]``, or ``{metric: top_k_accuracy,
k: 3}``). Each metric accumulates over a validation pass on the host: ``update`` takes
one batch's predictions and targets as plain lists (forecasts already in the data's
own units; for classifiers, the logits' rows and the class ids), ``result`` gives the
value. Losses stay on the device; metrics see what the loop reads back for them.

``task`` says which records a metric fits: ``regression`` (forecasts) or
``classification`` (classifiers and language models). ``from_loss`` metrics are a
function of the mean cross-entropy alone (perplexity, bits per character), so they
need no predictions at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.errors import ScellisError
from .registry import field, lookup, register


@dataclass(frozen=True)
class NoOptions:
    """A metric without options."""


@dataclass(frozen=True)
class TopKConfig:
    """Accuracy counting a hit when the class is among the k most likely."""

    k: int = field(5, doc="how many of the most likely classes count", min=1)


class Metric:
    task = "regression"
    from_loss = False
    better = "min"  # which way is better: min or max

    def __init__(self, config=None):
        self.cfg = config if config is not None else NoOptions()
        self.reset()

    def reset(self) -> None:
        self.n, self.total = 0, 0.0

    def update(self, pred: list, target: list) -> None:
        raise NotImplementedError

    def result(self) -> float | None:
        return self.total / self.n if self.n else None


class _Pointwise(Metric):
    """A mean over every predicted value (every horizon step of every window)."""

    def term(self, p: float, t: float) -> float | None:
        raise NotImplementedError

    def update(self, pred, target):
        for p, t in zip(_flat(pred), _flat(target)):
            v = self.term(p, t)
            if v is not None:
                self.total += v
                self.n += 1


class MAE(_Pointwise):
    def term(self, p, t):
        return abs(p - t)


class RMSE(_Pointwise):
    def term(self, p, t):
        return (p - t) ** 2

    def result(self):
        return math.sqrt(self.total / self.n) if self.n else None


class MAPE(_Pointwise):
    """Mean absolute percentage error, in %; targets of 0 are left out (undefined)."""

    def term(self, p, t):
        return None if t == 0 else 100.0 * abs((p - t) / t)


class SMAPE(_Pointwise):
    """Symmetric MAPE, in % (0..200); a pair of zeros counts as no error."""

    def term(self, p, t):
        d = abs(p) + abs(t)
        return 0.0 if d == 0 else 200.0 * abs(p - t) / d


class R2(Metric):
    """Coefficient of determination over every predicted value (1 is perfect)."""

    better = "max"

    def reset(self):
        self.n, self.sse, self.s, self.ss = 0, 0.0, 0.0, 0.0

    def update(self, pred, target):
        for p, t in zip(_flat(pred), _flat(target)):
            self.n += 1
            self.sse += (p - t) ** 2
            self.s += t
            self.ss += t * t

    def result(self):
        if self.n == 0:
            return None
        sst = self.ss - self.s * self.s / self.n
        return 1.0 - self.sse / sst if sst > 0 else None


class Accuracy(Metric):
    """The share of positions whose most likely class is the target."""

    task, better = "classification", "max"

    def update(self, pred, target):
        for row, t in _rows(pred, target):
            self.n += 1
            self.total += row.index(max(row)) == t

    def result(self):
        return self.total / self.n if self.n else None


class TopKAccuracy(Accuracy):
    def update(self, pred, target):
        k = self.cfg.k
        for row, t in _rows(pred, target):
            self.n += 1
            # ties at the k-th value count in the target's favour only when it is strictly
            # above the (k+1)-th: the number of classes scoring higher than it decides
            higher = sum(1 for v in row if v > row[t])
            self.total += higher < k


class Perplexity(Metric):
    """exp(mean cross-entropy in nats)."""

    task, from_loss = "classification", True

    def of_loss(self, loss: float) -> float:
        return math.exp(min(loss, 700.0))


class BitsPerChar(Metric):
    """Mean cross-entropy in bits (per character for a char model, per token otherwise)."""

    task, from_loss = "classification", True

    def of_loss(self, loss: float) -> float:
        return loss / math.log(2.0)


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield float(v)


def _rows(pred, target):
    """(logit row, class id) pairs from [.., C] logits and [..] ids of any nesting."""
    if (
        pred
        and isinstance(pred[0], (list, tuple))
        and pred[0]
        and isinstance(pred[0][0], (list, tuple))
    ):
        for p, t in zip(pred, target):
            yield from _rows(p, t)
        return
    for row, t in zip(pred, target):
        yield list(row), int(t)


BUILTIN = {
    "mae": (MAE, NoOptions, "mean absolute error, in the data's units"),
    "rmse": (RMSE, NoOptions, "root mean squared error, in the data's units"),
    "mape": (MAPE, NoOptions, "mean absolute percentage error (%)"),
    "smape": (SMAPE, NoOptions, "symmetric mean absolute percentage error (%)"),
    "r2": (R2, NoOptions, "coefficient of determination"),
    "accuracy": (Accuracy, NoOptions, "share of positions predicted right"),
    "top_k_accuracy": (TopKAccuracy, TopKConfig, "share with the target among the top k"),
    "perplexity": (Perplexity, NoOptions, "exp of the mean cross-entropy"),
    "bits_per_char": (BitsPerChar, NoOptions, "mean cross-entropy in bits"),
}
for _name, (_impl, _config, _doc) in BUILTIN.items():
    register(f"metric/{_name}", "metric", _config, _impl, doc=_doc, builtin=True)


def metric_id(name: str) -> str:
    """``mae`` or ``metric/mae`` (or a user's ``user/metric/x``) as a catalog id."""
    return name if "/" in name else f"metric/{name}"


def short_name(spec) -> str:
    """The name a metric is reported under: ``mae``, ``top_3_accuracy``..."""
    name = spec if isinstance(spec, str) else spec.get("metric", "")
    base = name.rsplit("/", 1)[-1]
    if base == "top_k_accuracy" and isinstance(spec, dict) and "k" in spec:
        return f"top_{spec['k']}_accuracy"
    return base


def make_metric(spec) -> Metric:
    """A metric object from an ``eval.metrics`` item (a name or ``{metric: name, ...}``)."""
    if isinstance(spec, str):
        name, options = spec, {}
    elif isinstance(spec, dict) and isinstance(spec.get("metric"), str):
        name, options = spec["metric"], {k: v for k, v in spec.items() if k != "metric"}
    else:
        raise ScellisError(f"eval.metrics: {spec!r} is not a metric name or {{metric: name}}")
    entry = lookup(metric_id(name), "metric")
    try:
        config = entry.config(**options)
    except TypeError as e:
        raise ScellisError(f"eval.metrics: {name}: {e}") from None
    metric = entry.impl(config)
    metric.name = short_name(spec)
    return metric
