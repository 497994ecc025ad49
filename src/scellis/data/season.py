"""The season of a series (data layer): from its dates, else from its autocorrelation.

A dated series has the calendar's cycle one level above its spacing (``frequency``:
52 weeks, 12 months, 4 quarters, 7 days, 24 hours). Without dates, or for a spacing
that has none (yearly), the season is the cycle the autocorrelation shows: first of
the values, then of their one-row changes (a trend keeps the values' autocorrelation
positive at every lag and so hides a cycle that the changes still show).
"""

from __future__ import annotations

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
