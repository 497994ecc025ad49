"""The datetimes after a series' last row, against NumPy's calendar arithmetic."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from scellis.data.timestep import time_after, time_writer


def _months_from(first: str, n: int, step: int) -> list[datetime]:
    start = np.datetime64(first, "M")
    return [(start + step * k).astype("datetime64[D]").astype(datetime) for k in range(n)]


@pytest.mark.parametrize("step", [1, 3, 12])
def test_a_series_on_the_first_of_the_month_steps_by_calendar_months(step):
    rng = np.random.default_rng(step)
    first = f"{rng.integers(1990, 2030)}-{rng.integers(1, 13):02d}"
    times = [datetime.combine(d, datetime.min.time()) for d in _months_from(first, 30, step)]
    last = np.datetime64(times[-1].date(), "M")
    for ahead in (1, 2, 7, 13):
        want = (last + step * ahead).astype("datetime64[D]").astype(datetime)
        assert time_after(times, ahead).date() == want


def test_month_ends_stay_month_ends():
    # a month's end: the first day of the next month, less one day (NumPy's calendar)
    starts = np.datetime64("2022-11", "M") + np.arange(1, 40)
    ends = (starts.astype("datetime64[D]") - np.timedelta64(1, "D")).astype(datetime)
    times = [datetime.combine(d, datetime.min.time()) for d in ends[:-12]]
    for ahead in range(1, 13):
        assert time_after(times, ahead).date() == ends[-13 + ahead]


def test_hourly_weekly_and_gappy_series_step_by_their_median_step():
    rng = np.random.default_rng(5)
    start = datetime(2024, 3, 1, int(rng.integers(0, 24)))
    hours = [start + timedelta(hours=int(h)) for h in range(40) if h not in (30, 31, 35)]
    assert time_after(hours, 3) == hours[-1] + timedelta(hours=3)
    weeks = [start + timedelta(weeks=k) for k in range(int(rng.integers(10, 60)))]
    assert time_after(weeks, 5) == weeks[-1] + timedelta(weeks=5)


def test_a_series_of_dates_writes_dates_and_one_with_times_writes_times():
    rng = np.random.default_rng(11)
    start = datetime(int(rng.integers(1990, 2030)), int(rng.integers(1, 13)), 1)
    days = [start + timedelta(days=int(d)) for d in np.cumsum(rng.integers(1, 3, 30))]
    write = time_writer(days)
    assert [write(t) for t in days] == [str(np.datetime64(t, "D")) for t in days]
    assert write(time_after(days, 2)) == str(np.datetime64(time_after(days, 2), "D"))
    # one row off midnight: every time keeps its time of day, midnights included
    hourly = [start + timedelta(hours=int(h)) for h in range(30)]
    assert [time_writer(hourly)(t) for t in hourly] == [
        str(np.datetime64(t, "s")).replace(" ", "T") for t in hourly
    ]
    # a zone is part of the series' own text
    zoned = [t.replace(tzinfo=UTC) for t in days]
    assert time_writer(zoned)(zoned[0]).endswith("+00:00")
