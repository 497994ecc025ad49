"""A series' step in time (data layer): the datetimes after its last row.

A series sampled on the calendar (monthly on the 1st or the 15th, month ends,
quarterly, yearly) steps by whole months, whose lengths differ, so it is extended by
months: 2023-01-31 is followed by 2023-02-28, then 2023-03-31. Any other series steps
by the median of its recent steps (a gap or two do not move it): hourly, daily, weekly.
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from datetime import datetime

RECENT = 20  # the steps a series' step is read from


def time_writer(times: list[datetime]) -> Callable[[datetime], str]:
    """How the series writes a time: dates alone when every one of its times is a
    midnight with no zone (a column of dates reads as midnights, and its predictions
    should read as the file did, not gain "T00:00:00"), else ISO date and time."""
    if times and all(_is_date(t) for t in times):
        return lambda t: t.date().isoformat()
    return datetime.isoformat


def _is_date(t: datetime) -> bool:
    return t.tzinfo is None and (t.hour, t.minute, t.second, t.microsecond) == (0, 0, 0, 0)


def time_after(times: list[datetime], ahead: int) -> datetime:
    """The datetime ``ahead`` steps after ``times[-1]`` (at least two times needed)."""
    recent = times[-RECENT:]
    months = _calendar_step(recent)
    if months:
        return _add_months(times[-1], months * ahead, _all_month_ends(recent))
    steps = sorted(b - a for a, b in zip(recent, recent[1:]))
    return times[-1] + steps[len(steps) // 2] * ahead


def _calendar_step(times: list[datetime]) -> int:
    """The months between rows when every recent row is that many months after the
    one before, on the same day of the month (or every one a month's end) at the same
    time of day; else 0."""
    gaps = {(b.year - a.year) * 12 + b.month - a.month for a, b in zip(times, times[1:])}
    if len(gaps) != 1 or min(gaps) < 1:
        return 0
    same_day = len({t.day for t in times}) == 1 or _all_month_ends(times)
    same_clock = len({t.time() for t in times}) == 1
    return gaps.pop() if same_day and same_clock else 0


def _all_month_ends(times: list[datetime]) -> bool:
    return all(t.day == calendar.monthrange(t.year, t.month)[1] for t in times)


def _add_months(t: datetime, months: int, month_end: bool) -> datetime:
    index = t.year * 12 + t.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return t.replace(year=year, month=month + 1, day=last if month_end else min(t.day, last))
