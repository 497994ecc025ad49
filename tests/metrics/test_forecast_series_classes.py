"""The default forecaster (``init --data``, then ``train`` unedited) on series classes
beyond a trend and a monthly cycle: daily rows with a weekly profile, and a long
hourly series whose training must stay bounded (the reference device)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import numpy as np

from scellis.cli.main import main
from scellis.run.prepare import check_record


def _init(capsys, tmp_path, values, step: timedelta) -> tuple[dict, dict]:
    when = [datetime(2020, 1, 6) + i * step for i in range(len(values))]
    (tmp_path / "s.csv").write_text("when,sales\n" + "".join(
        f"{w.isoformat()},{v:.3f}\n" for w, v in zip(when, values)))  # fmt: skip
    rec = tmp_path / "m.sml"
    assert main(["init", str(rec), "--data", str(tmp_path / "s.csv"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    return got, check_record(rec.read_text(), base_dir=tmp_path)


def test_a_weekly_profile_on_daily_rows_is_framed_by_its_window_not_its_last_value(
    tmp_path, capsys
):  # fmt: skip
    """Daily sales with a fixed weekly profile under noise: the season is strong and
    holds still, so it is neither differenced nor mistaken for a noisy level (a
    window's mean forecasts the next day better than the last day does because of the
    profile alone). On two years of such rows the last-value frame erred 10.3 where
    the window's erred 7.5, against seasonal naive's 8.7 (bench/RESULTS.md); on the 40
    weeks here the two are often close, so the run is only checked to learn the
    profile (half persistence's error). Seeded: the profile's peaks rise with the
    trend, and in 23 of 300 draws (seeds 0-299) noise lifts 10% of the last rows past the
    earlier range, which the trend test reads as a drift (bench/RESULTS.md)."""
    rng = np.random.default_rng(2026)
    n, t = 280, np.arange(280)
    profile = rng.uniform(0.5, 1.5, 7)
    values = rng.uniform(50, 200) * profile[t % 7] * (1 + 5e-4 * t) + rng.normal(0, 6, n)
    got, _ = _init(capsys, tmp_path, values, timedelta(days=1))
    assert got["data"]["normalise"] == "window" and "a cycle of 7 days" in got["why"]["season"]
    ev = _train(capsys, tmp_path / "m.sml", tmp_path / "st")
    assert ev["baselines"]["seasonal_naive"]["season"] == 7
    assert ev["metrics"]["mae"] < ev["baselines"]["persistence"]["mae"] / 2, ev


def _train(capsys, record, store) -> dict:
    code = main(["train", str(record), "--device", "reference", "--store", str(store), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    return [e for e in map(json.loads, out.splitlines()) if e.get("kind") == "eval"][-1]


def test_a_long_series_trains_a_bounded_number_of_steps(tmp_path, capsys):
    """20,000 hourly rows: a few passes, not 20 of 500 batches each (and a validation
    pass after each of those 10,000 steps: over an hour on the reference device)."""
    rng = np.random.default_rng()
    t = np.arange(20_000)
    values = 50 + 10 * np.sin(2 * np.pi * t / 24) + np.cumsum(rng.normal(0, 0.1, t.size))
    got, record = _init(capsys, tmp_path, values + rng.normal(0, 1, t.size), timedelta(hours=1))
    assert got["data"]["window"] == 48
    windows = 16_000 - 48
    steps = record["epochs"] * -(-windows // record["batch_size"])
    assert 500 <= steps <= 1_000 and record["scheduler"]["t_max"] == steps
    # and validates its 4,000 windows once an epoch, not after every step
    assert record["eval"]["every"] == steps // record["epochs"]
