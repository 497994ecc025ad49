"""The sampling frequency of a dated series, read off its timestamps.

The tab names a series' steps in words (a horizon of 12 *weeks*, one *day* ahead), so
it needs the spacing of the rows: the median gap between consecutive times, matched to
the calendar unit it is closest to (months and years vary in length, so each unit
accepts a band of gaps). A spacing no unit matches is reported as ``None``: the page
then speaks of rows. A unit also says the season a series of it usually has (the
cycle of the calendar one level up): 24 hours, 7 days, 52 weeks, 12 months, 4 quarters.
"""

from __future__ import annotations

from datetime import datetime
from statistics import median

_DAY = 86400.0
# (adjective, unit, shortest and longest gap in seconds that still read as that unit)
_UNITS = (
    ("every second", "second", 0.9, 1.1),
    ("every minute", "minute", 54.0, 66.0),
    ("hourly", "hour", 3240.0, 3960.0),
    ("daily", "day", 0.9 * _DAY, 1.1 * _DAY),
    ("weekly", "week", 6.5 * _DAY, 7.5 * _DAY),
    ("monthly", "month", 28 * _DAY, 31 * _DAY),
    ("quarterly", "quarter", 89 * _DAY, 92 * _DAY),
    ("yearly", "year", 365 * _DAY, 366 * _DAY),
)


def frequency(times: list[datetime]) -> dict | None:
    """``{"name": "weekly", "unit": "week"}`` for times spaced a week apart (the median
    gap decides, so a missing row or a daylight-saving hour does not); ``None`` for
    fewer than two times or a spacing that is no calendar unit."""
    if len(times) < 2:
        return None
    gap = median((b - a).total_seconds() for a, b in zip(times, times[1:]))
    for name, unit, lo, hi in _UNITS:
        if lo <= gap <= hi:
            return {"name": name, "unit": unit}
    return None


# the calendar's cycle for rows of each unit; seconds, minutes and years have none
_SEASONS = {"hour": 24, "day": 7, "week": 52, "month": 12, "quarter": 4}


def calendar_season(times: list[datetime] | None) -> int | None:
    """The season rows spaced like ``times`` usually have (see the module note)."""
    freq = frequency(times or [])
    return _SEASONS.get(freq["unit"]) if freq else None
