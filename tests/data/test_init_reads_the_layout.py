"""``scellis init --data`` reads a CSV as its author laid it out: the delimiter, the
date pattern, a row index beside the values, or one clear refusal (exit 2) for a file
it cannot read as a series (no header, decimal commas, newest first)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import numpy as np
import pytest

from scellis.cli.main import main
from scellis.data.record import load_data


def _init(tmp_path, capsys, text: str) -> tuple[int, dict | str]:
    (tmp_path / "s.csv").write_text(text)
    code = main(["init", str(tmp_path / "m.sml"), "--data", str(tmp_path / "s.csv"), "--json",
                 "--force"])  # fmt: skip
    out = capsys.readouterr()
    return code, json.loads(out.out) if code == 0 else out.err


def _values(n: int) -> np.ndarray:
    rng = np.random.default_rng()
    t = np.arange(n)
    return rng.uniform(20, 80) + 5 * np.sin(2 * np.pi * t / 7) + rng.normal(0, 1, n)


def test_semicolons_and_day_first_dates_are_read_and_written_into_the_record(tmp_path, capsys):
    v = _values(120)
    days = [date(2021, 1, 1) + timedelta(days=i) for i in range(120)]
    code, got = _init(tmp_path, capsys, "Datum;Wert\n" + "".join(
        f"{d:%d.%m.%Y};{x:.4f}\n" for d, x in zip(days, v)))  # fmt: skip
    assert code == 0, got
    assert got["data"]["delimiter"] == ";" and got["data"]["datetime"] == "Datum"
    assert got["data"]["datetime_format"] == "%d.%m.%Y"
    assert "daily" in got["why"]["datetime"]  # the season now comes from the dates: 7
    data = {**got["data"], "source": str(tmp_path / "s.csv")}
    ds = load_data(data)
    np.testing.assert_allclose(ds.target_values, np.round(v, 4))
    assert ds.times[-1].date() == days[-1]


@pytest.mark.parametrize("first, pattern", [("day", "%d/%m/%Y"), ("month", "%m/%d/%Y")])
def test_slashed_month_starts_read_by_the_evenly_spaced_reading(tmp_path, capsys, first, pattern):
    """01/02/2020 reads under both patterns; the first of each month is the reading with
    even gaps, the other jumps from the 12th of one month to the 1st of the next year."""
    starts = [date(2015 + i // 12, i % 12 + 1, 1) for i in range(96)]
    fmt = "%d/%m/%Y" if first == "day" else "%m/%d/%Y"
    code, got = _init(tmp_path, capsys, "when,sales\n" + "".join(
        f"{d.strftime(fmt)},{x:.3f}\n" for d, x in zip(starts, _values(96))))  # fmt: skip
    assert code == 0, got
    assert got["data"]["datetime_format"] == pattern
    assert "monthly" in got["why"]["datetime"]


def test_a_row_index_and_a_running_total_are_not_taken_for_the_series_or_years(
    tmp_path, capsys
):  # fmt: skip
    v = _values(100)
    total = 1000 + np.cumsum(np.random.default_rng().integers(2, 9, 100))  # whole, increasing
    code, got = _init(tmp_path, capsys, ",total,sales\n" + "".join(
        f"{i},{c},{x:.3f}\n" for i, (c, x) in enumerate(zip(total, v))))  # fmt: skip
    assert code == 0, got
    assert got["data"]["column"] == "total" and "datetime" not in got["data"]
    # an index from 1 could be years, but the dates beside it are the time axis
    days = [date(2021, 1, 1) + timedelta(days=i) for i in range(100)]
    code, got = _init(tmp_path, capsys, "n,day,sales\n" + "".join(
        f"{i + 1},{d},{x:.3f}\n" for i, (d, x) in enumerate(zip(days, v))))  # fmt: skip
    assert code == 0, got
    assert (got["data"]["column"], got["data"]["datetime"]) == ("sales", "day")


@pytest.mark.parametrize("case, words", [
    ("no_header", "holds values, not column names"),
    ("decimal_comma", "decimal commas"),
    ("thousands", "thousands separators"),
    ("newest_first", "newest first"),
])  # fmt: skip
def test_a_file_it_cannot_read_as_a_series_is_refused_in_one_line(tmp_path, capsys, case, words):
    v = _values(60)
    days = [date(2022, 3, 1) + timedelta(days=i) for i in range(60)]
    text = {
        "no_header": "".join(f"{d},{x:.3f}\n" for d, x in zip(days, v)),
        "decimal_comma": "date;value\n" + "".join(
            f"{d};{x:.3f}\n".replace(".", ",") for d, x in zip(days, v)),
        "thousands": "date,value\n" + "".join(f'{d},"{1000 * x:,.2f}"\n' for d, x in zip(days, v)),
        "newest_first": "date,value\n" + "".join(
            f"{d},{x:.3f}\n" for d, x in zip(days[::-1], v)),
    }[case]  # fmt: skip
    code, err = _init(tmp_path, capsys, text)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("scellis: error:"), err
    assert words in lines[0]
    assert not (tmp_path / "m.sml").exists()


@pytest.mark.parametrize("step, season", [("week", 52), ("day", 7), ("hour", 24)])
def test_the_calendar_season_is_taken_only_where_the_series_shows_it(
    tmp_path, capsys, step, season
):  # fmt: skip
    """Weekly, daily and hourly rows with their calendar's cycle (and a few outliers)
    keep it; drifting walks on the same dates mostly have none (the check errs, as a
    test at 5% does, on a few), and get the window of a series without one instead of
    two calendar cycles."""
    rng = np.random.default_rng()
    n, t = 8 * season + 40, np.arange(8 * season + 40)
    gap = {"week": timedelta(weeks=1), "day": timedelta(days=1), "hour": timedelta(hours=1)}
    when = [(datetime(2011, 1, 3) + i * gap[step]).isoformat() for i in range(n)]

    def advice(values):
        code, got = _init(tmp_path, capsys, "when,value\n" + "".join(
            f"{w},{v:.4f}\n" for w, v in zip(when, values)))  # fmt: skip
        assert code == 0, got
        return got

    cycle = 50 + 0.05 * t + 6 * np.sin(2 * np.pi * t / season) + rng.normal(0, 1, n)
    cycle[rng.choice(n, 4, replace=False)] += rng.uniform(50, 100)
    assert "a cycle of" in advice(cycle)["why"]["season"]
    walks = [advice(50 + np.cumsum(rng.normal(0.2, 1, n))) for _ in range(10)]
    plain = [w for w in walks if "no season" in w["why"]["season"]]
    assert len(plain) >= 5 and all(w["data"]["window"] <= 16 for w in plain)
    # counts mostly zero: their ties must not rank in time order and fake a cycle
    counts = [advice(rng.poisson(0.3, n) * rng.integers(1, 5, n)) for _ in range(10)]
    assert sum("no season" in c["why"]["season"] for c in counts) >= 5
