"""What the tab calls a record's data: the target column and the rows' spacing, and the
record's comments once other data is pinned."""

from __future__ import annotations

import csv
import random
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from scellis.data.frequency import frequency
from scellis.data.record import BUNDLED
from scellis.sml import parse
from scellis.webapp import data_labels, dataset_api, model_api

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()


def _months(start: datetime, n: int, every: int) -> list[datetime]:
    out = []
    for i in range(n):
        m = start.month - 1 + i * every
        out.append(start.replace(year=start.year + m // 12, month=m % 12 + 1))
    return out


def _calendar(unit: str, start: datetime, n: int) -> list[datetime]:
    """``n`` times one ``unit`` apart by calendar arithmetic (months and years vary)."""
    if unit in ("month", "quarter", "year"):
        return _months(start, n, {"month": 1, "quarter": 3, "year": 12}[unit])
    step = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}[unit]
    return [start + timedelta(seconds=step * i) for i in range(n)]


@pytest.mark.parametrize("unit", ["second", "minute", "hour", "day", "week", "month", "quarter",
                                  "year"])  # fmt: skip
def test_the_spacing_of_dates_is_their_calendar_unit_despite_a_gap(unit):
    rng = random.Random(unit)
    start = datetime(rng.randrange(1800, 2030), rng.randrange(1, 13), rng.randrange(1, 29))
    times = _calendar(unit, start, rng.randrange(30, 80))
    del times[rng.randrange(1, len(times) - 1)]  # a missing row
    assert frequency(times)["unit"] == unit


def test_an_irregular_spacing_is_no_unit():
    rng = random.Random(3)
    start = datetime(2020, 1, 1)
    assert frequency([start + timedelta(days=10 * i) for i in range(20)]) is None
    assert frequency([start]) is None
    jitter = [start + timedelta(hours=rng.uniform(100, 130) * i) for i in range(20)]
    assert frequency(jitter) is None


def test_the_example_names_its_bundled_file_its_column_and_years():
    got = data_labels.record_labels(LSTM)
    with (BUNDLED / "sunspots_yearly.csv").open() as f:
        years = [int(r["year"]) for r in csv.DictReader(f)]
    assert {b - a for a, b in zip(years, years[1:])} == {1}  # the oracle: one year apart
    assert got == {"kind": "csv", "file": "sunspots_yearly.csv", "own": True,
                   "target": "sunspots", "datetime": None,
                   "frequency": {"name": "yearly", "unit": "year"}}  # fmt: skip


def _weekly(rng: random.Random, n: int = 90) -> str:
    start = datetime(rng.randrange(2000, 2020), 1, 2)
    rows = ["date,load_mw"] + [
        f"{(start + timedelta(weeks=i)).date()},{rng.uniform(300, 900):.2f}" for i in range(n)
    ]
    return "\n".join(rows) + "\n"


def _comments(text: str) -> str:
    return "\n".join(m.group(0) for m in re.finditer(r"(^|\s)#.*$", text, re.M))


def test_pinning_a_weekly_file_makes_the_comments_name_it(tmp_path):
    text = _weekly(random.Random(5))
    out = model_api.dataset_from(LSTM, "load.csv", text, column="load_mw", datetime="date",
                                 folder=str(tmp_path))  # fmt: skip
    plain = dataset_api.dataset_from(LSTM, "load.csv", text, column="load_mw", datetime="date",
                                     folder=str(tmp_path))  # fmt: skip
    # the SML itself is the data panel's pin; only the comments differ
    assert parse(out["record"], "m.sml").data == parse(plain["record"], "m.sml").data
    said = _comments(out["record"])
    assert not re.search(r"sunspot|year", said, re.I), said
    assert "20 past weeks in, the next week out" in said and "in weeks" in said
    assert "in load_mw" in said and "weekly load_mw" in said
    assert out["dataset"]["labels"] == {
        "kind": "csv", "file": "load.csv", "own": False, "target": "load_mw",
        "datetime": "date", "frequency": {"name": "weekly", "unit": "week"},
    }  # fmt: skip
    # a file of irregular times: the comments speak of rows, with no adjective left
    rng = random.Random(6)
    odd = "t,v\n" + "".join(f"{i * 10 + rng.randrange(3)},{rng.random()}\n" for i in range(90))
    again = model_api.dataset_from(LSTM, "odd.csv", odd, column="v", folder=str(tmp_path))
    said = _comments(again["record"])
    assert "LSTM forecaster for v: 20 past rows in, the next row out" in said, said


def test_a_new_window_and_horizon_are_followed_by_the_comments(tmp_path):
    rng = random.Random()
    text = _weekly(random.Random(7))
    window, horizon = rng.randrange(8, 16), rng.randrange(2, 6)
    first = model_api.dataset_from(LSTM, "load.csv", text, column="load_mw", datetime="date",
                                   folder=str(tmp_path))  # fmt: skip
    out = model_api.dataset_from(first["record"], "load.csv", text, column="load_mw",
                                 datetime="date", folder=str(tmp_path),
                                 options={"window": window, "horizon": horizon})  # fmt: skip
    doc = parse(out["record"], "m.sml").data
    # the oracle: what the engine wrote into the SML itself
    assert doc["data"]["window"] == window and doc["data"]["horizon"] == horizon
    assert doc["blocks"]["head"]["n_outputs"] == horizon
    said = _comments(out["record"])
    assert f"{window} past weeks in, the next {horizon} weeks out" in said, said
    assert f"{horizon} weeks ahead" in said and f"{window} steps" in said, said
    assert "one week ahead" not in said and "20 past" not in said, said
    # and back to one step: the singular again
    back = model_api.dataset_from(out["record"], "load.csv", text, column="load_mw",
                                  datetime="date", folder=str(tmp_path),
                                  options={"horizon": 1})  # fmt: skip
    said = _comments(back["record"])
    assert "the next week out" in said and "one week ahead" in said, said


def test_a_code_view_edit_of_the_counts_is_followed_but_the_users_own_comments_stay(tmp_path):
    rng = random.Random()
    text = _weekly(random.Random(8))
    pinned = model_api.dataset_from(LSTM, "load.csv", text, column="load_mw", datetime="date",
                                    folder=str(tmp_path))["record"]  # fmt: skip
    window, horizon = rng.randrange(8, 16), rng.randrange(2, 6)
    # typed in the code view: the counts change, and one comment the user rewrote
    typed = (pinned.replace("  window: 20 ", f"  window: {window} ")
             .replace("  horizon: 1\n", f"  horizon: {horizon}\n")
             .replace("# one week ahead", "# one week ahead, as I wrote"))  # fmt: skip
    assert typed.count(f"window: {window}") == 1 and f"horizon: {horizon}" in typed
    out = model_api.follow(pinned, typed)
    assert out["settled"]
    # the oracle: the data panel's change of the same counts
    counts = {"window": window, "horizon": horizon}
    panel = model_api.dataset_from(pinned, "load.csv", text, column="load_mw", datetime="date",
                                   folder=str(tmp_path), options=counts)["record"]  # fmt: skip
    doc, want = parse(out["text"], "m.sml").data, parse(panel, "m.sml").data
    assert doc["inputs"] == want["inputs"] and doc["blocks"] == want["blocks"]
    assert doc["data"]["sha256"] == want["data"]["sha256"]
    said = _comments(out["text"])
    assert f"{window} past weeks in, the next {horizon} weeks out" in said, said
    assert "# one week ahead, as I wrote" in out["text"]  # the user's own words stay
    # a count half typed is not followed yet, and says so
    half = model_api.follow(pinned, pinned.replace("  horizon: 1\n", "  horizon:\n"))
    assert not half["settled"] and "the next week out" in _comments(half["text"])
