"""The season of a series (data layer): from its dates, else from its autocorrelation.

A dated series has the calendar's cycle one level above its spacing (``frequency``:
52 weeks, 12 months, 4 quarters, 7 days, 24 hours), when the series shows it
(``season_shows``: weekly sales may have no yearly cycle, a quarterly series may be
seasonally adjusted already; a season that is not there would only set a window
longer than the series needs and a seasonal-naive baseline of no meaning). Without
dates, or for a spacing that has none (yearly), the season is the cycle the
autocorrelation shows: first of
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
import statistics

from .frequency import calendar_season


def detect_season(train: list[float], times=None) -> int | None:
    """The season of a series whose training rows are ``train`` (see the module note);
    None when none shows or the training rows do not hold one whole season."""
    season = calendar_season(times)
    if season is not None:
        # rows on the calendar have its cycle or none: another one the autocorrelation
        # picks out of a short series is more often chance than a cycle
        return season if season_shows(train, season) is not False and season < len(train) else None
    steps = [b - a for a, b in zip(train, train[1:])]
    season = infer_season(train) or infer_season(steps, least=0.3)
    return season if season is not None and 1 < season < len(train) else None


def season_shows(values: list[float], season: int) -> bool | None:
    """Whether the cycle of ``season`` rows is in ``values`` (Darts' seasonality check,
    made robust): with the trend taken out (``_detrended``, of the values with their
    outliers clipped), the autocorrelation of the ranks at that lag is over the 95%
    bound of white noise (1.96 / sqrt(n)) and over that at half the lag (a cycle peaks
    there; what a wandering level leaves decays smoothly instead). Clipped and ranked,
    so that a few outliers (a holiday's sales) neither hide a cycle nor fake one. None
    when the rows are too few to tell (the calendar's cycle is then kept)."""
    rest = list(_detrended(_clipped(values, season), season).values())
    n = len(rest)
    if n <= season + 2:
        return None
    ranks = _centred_ranks(rest)
    var = math.fsum(r * r for r in ranks)
    if var == 0:
        return False  # a flat series has no cycle

    def acf(lag: int) -> float:
        return math.fsum(a * b for a, b in zip(ranks, ranks[lag:])) / var

    at = acf(season)
    return at > 1.96 / math.sqrt(n) and at > acf(season // 2)


def _clipped(values: list[float], season: int, k: float = 5.0) -> list[float]:
    """``values`` held within ``k`` typical steps of the running median over one season
    around each (a Hampel filter whose scale, the median one-row change, a trend does
    not inflate), so that an outlier is not smeared over a season by the average."""
    steps = sorted(abs(b - a) for a, b in zip(values, values[1:]))
    if not steps:
        return list(values)
    reach = k * steps[len(steps) // 2]
    half, n = season // 2, len(values)
    out = []
    for t, v in enumerate(values):
        mid = statistics.median(values[max(t - half, 0) : min(t + half + 1, n)])
        out.append(min(max(v, mid - reach), mid + reach))
    return out


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
    detrended = _detrended(values, season)
    phase = [[d for t, d in detrended.items() if t % season == p] for p in range(season)]
    means = [math.fsum(ph) / len(ph) for ph in phase]
    level = math.fsum(means) / season
    rest = [d - (means[t % season] - level) for t, d in detrended.items()]
    var_rest, var_all = _variance(rest), _variance(list(detrended.values()))
    return max(0.0, 1.0 - var_rest / var_all) if var_all > 0 else 0.0


def _centred_ranks(values: list[float]) -> list[float]:
    """Each value's rank less the middle one; tied values share their mean rank (the
    zeros of a count series would otherwise rank in time order: a trend of ranks)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 - (len(values) - 1) / 2
        start = end + 1
    return ranks


def _detrended(values: list[float], season: int) -> dict[int, float]:
    """``{row: value less the centred average of one season around it}``, the rows
    half a season from either end left out (an even season: half weights at the ends)."""
    weights = [1.0] * season if season % 2 else [0.5] + [1.0] * (season - 1) + [0.5]
    span = len(weights) // 2
    return {
        t: values[t] - math.fsum(w * values[t - span + i] for i, w in enumerate(weights)) / season
        for t in range(span, len(values) - span)
    }


def _variance(values: list[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / len(values)
