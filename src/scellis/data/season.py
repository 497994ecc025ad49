"""The season of a series (data layer): from its dates, else from its autocorrelation.

A dated series has the calendar's cycle one level above its spacing (``frequency``:
52 weeks, 12 months, 4 quarters, 7 days, 24 hours). Without dates, or for a spacing
that has none (yearly), the season is the cycle the autocorrelation shows: first of
the values, then of their one-row changes (a trend keeps the values' autocorrelation
positive at every lag and so hides a cycle that the changes still show).

How much a season matters is told by two numbers: its strength (the share of the
variation left once the trend is taken out that the season explains, from a classical
decomposition: a centred moving average of one season as the trend, each phase's mean
as the season) and how well it repeats (the error of repeating the value one season
back against that of repeating the last row, ``naive_mae``).
"""

from __future__ import annotations

import math

from .frequency import calendar_season


def detect_season(train: list[float], times=None) -> int | None:
    """The season of a series whose training rows are ``train`` (see the module note);
    None when none shows or the training rows do not hold one whole season."""
    season = calendar_season(times)
    if season is None:
        steps = [b - a for a, b in zip(train, train[1:])]
        season = infer_season(train) or infer_season(steps, least=0.3)
    return season if season is not None and 1 < season < len(train) else None


def infer_season(values: list[float], longest: int = 400, least: float = 0.1) -> int | None:
    """The lag of the highest autocorrelation after it first turns negative (a cycle's
    length), if that peak is over ``least``; None for a series with no cycle."""
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
    return best if best is not None and r[best] > least else None


def naive_mae(values: list[float], lag: int) -> float | None:
    """The mean absolute error of repeating the value ``lag`` rows back, over ``values``."""
    errs = [abs(b - a) for a, b in zip(values, values[lag:])]
    return math.fsum(errs) / len(errs) if errs else None


def seasonal_strength(values: list[float], season: int) -> float:
    """1 - var(remainder) / var(season + remainder) of ``values`` (0 when it is not two
    seasons long): near 1 for a clean cycle, near 0 for noise around a trend."""
    n = len(values)
    if n < 2 * season + 1:
        return 0.0
    # a centred average over one season (an even season: half weights at both ends)
    weights = [1.0] * season if season % 2 else [0.5] + [1.0] * (season - 1) + [0.5]
    span = len(weights) // 2
    detrended = {
        t: values[t] - math.fsum(w * values[t - span + i] for i, w in enumerate(weights)) / season
        for t in range(span, n - span)
    }
    phase = [[d for t, d in detrended.items() if t % season == p] for p in range(season)]
    means = [math.fsum(ph) / len(ph) for ph in phase]
    level = math.fsum(means) / season
    rest = [d - (means[t % season] - level) for t, d in detrended.items()]
    var_rest, var_all = _variance(rest), _variance(list(detrended.values()))
    return max(0.0, 1.0 - var_rest / var_all) if var_all > 0 else 0.0


def _variance(values: list[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / len(values)
