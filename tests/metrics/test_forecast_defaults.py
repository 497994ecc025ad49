"""Forecasts worth using: per-window normalisation against a NumPy oracle, the season
from the dates, the verdict beside the baselines, records that follow their data, and
the default forecaster beating persistence and seasonal naive on a trending, a
seasonal and a bundled real series (the reference device, a few seconds each)."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import date, timedelta

import numpy as np
import pytest

from scellis.autograd import no_grad
from scellis.base.errors import ScellisError
from scellis.cli.init import starter_text
from scellis.cli.main import main
from scellis.data.record import load_data
from scellis.run.baselines import baselines
from scellis.run.effective import effective_record
from scellis.run.prepare import check_record
from scellis.run.reference import open_run
from scellis.runtime.creation import tensor


def _write(path, values, start=date(2001, 1, 1), step="month"):
    def when(i):
        if step == "week":
            return start + timedelta(weeks=i)
        y, m = divmod(start.month - 1 + i, 12)
        return date(start.year + y, m + 1, 1)

    rows = ["when,value"] + [f"{when(i)},{v:.6f}" for i, v in enumerate(values)]
    path.write_text("\n".join(rows) + "\n")
    return np.round(np.asarray(values), 6)


def _frame_oracle(v, length, how, floor):
    """(shift, scale) of a window's inputs ``v`` as the module note defines them."""
    if how == "change":
        return v[-1], max(np.sqrt(np.mean(np.diff(v) ** 2)), floor)
    return v.mean(), max(v.std(), floor)


def _target_oracle(v, how, floor, season, horizon):
    """(each target step's shift, the targets' scale) of a window's inputs ``v``."""
    if how != "season":
        shift, scale = _frame_oracle(v, len(v), how, floor)
        return np.full(horizon, shift), scale
    spread = np.median(np.abs(v[season:] - v[:-season])) / 0.6744897501960817
    # step h (from 1) repeats the value one season back, the last season for h > season
    lagged = [v[len(v) + h - season * ((h - 1) // season + 1) - 1] for h in range(1, horizon + 1)]
    return np.array(lagged), max(spread, floor)


@pytest.mark.parametrize("how", ["change", "window", "season"])
def test_windows_are_framed_by_their_own_inputs_and_map_back(tmp_path, how):
    rng = np.random.default_rng()
    # the validation fifth must hold a window and a horizon of up to 8 + 9 rows
    n, length = int(rng.integers(90, 120)), int(rng.integers(4, 9))
    season = int(rng.integers(2, length)) if how == "season" else None
    horizon = season + 2 if season else 3  # past one season: the last season repeats
    t = np.arange(n)
    raw = _write(tmp_path / "s.csv", np.cumsum(rng.normal(0.5, 2.0, n)) + 100
                 + 5 * np.sin(2 * np.pi * t / (season or 7)))  # fmt: skip
    data = {"source": str(tmp_path / "s.csv"), "column": "value", "window": length,
            "horizon": horizon, "normalise": how}  # fmt: skip
    ds = load_data({**data, "season": season} if season else data)
    cut = round(n * 0.8)
    floor = 0.1 * np.sqrt(np.mean(np.diff(raw[:cut]) ** 2))
    assert ds.stats["value"][1] == pytest.approx(floor, rel=1e-12)
    inputs = "window" if how == "season" else how  # seasonal differences frame the targets
    for xs, ys, starts, frames in ((ds.x_train, ds.y_train, ds.train_starts, ds.train_frames),
                                   (ds.x_val, ds.y_val, ds.val_starts, ds.val_frames)):  # fmt: skip
        for x, y, s, frame in zip(xs, ys, starts, frames):
            v = raw[s : s + length]
            shift, scale = _frame_oracle(v, length, inputs, floor)
            np.testing.assert_allclose(np.array(x)[:, 0], (v - shift) / scale,
                                       rtol=1e-10, atol=1e-12)  # fmt: skip
            shifts, scale = _target_oracle(v, how, floor, season, horizon)
            actual = raw[s + length : s + length + horizon]
            np.testing.assert_allclose(y, (actual - shifts) / scale, rtol=1e-9, atol=1e-9)
            assert frame[1] == pytest.approx(scale, rel=1e-12)
            back = [ds.denormalise(v, frame=frame, step=k) for k, v in enumerate(y)]
            np.testing.assert_allclose(back, actual, rtol=1e-12)


def test_a_record_without_a_season_keeps_its_dataset_version(tmp_path):
    """The version of a record that names no season is the sha256 of the documented
    canonical text, which has no season key."""
    import hashlib  # noqa: PLC0415

    rng = np.random.default_rng()
    _write(tmp_path / "s.csv", rng.normal(10, 2, 40))
    got = load_data({"source": str(tmp_path / "s.csv"), "column": "value", "window": 5,
                     "normalise": "change"})  # fmt: skip
    lines = (tmp_path / "s.csv").read_text().splitlines()[1:]
    config = {"features": ["value"], "target": "value", "datetime": None,
              "datetime_format": "iso", "missing": "error", "length": 5, "horizon": 1,
              "stride": 1, "val_fraction": 0.2, "normalise": "change",
              "delimiter": ","}  # fmt: skip
    doc = {"format": "scellis.csv/1", "config": config, "times": None,
           "columns": {"value": [float(line.split(",")[1]) for line in lines]}}  # fmt: skip
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert got.digest == hashlib.sha256(text.encode()).hexdigest()
    seasonal = load_data({"source": str(tmp_path / "s.csv"), "column": "value", "window": 5,
                          "normalise": "season", "season": 3})  # fmt: skip
    config.update(normalise="season", season=3)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert seasonal.digest == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("data, words", [
    ({"normalise": "season"}, "go together"),
    ({"season": 12}, "go together"),
    ({"normalise": "season", "season": 24}, "window - 1"),
    ({"normalise": "season", "season": 1}, "window - 1"),
])  # fmt: skip
def test_a_season_record_the_window_cannot_hold_is_refused_in_one_line(tmp_path, capsys, data,
                                                                       words):  # fmt: skip
    _write(tmp_path / "s.csv", np.random.default_rng().normal(10, 2, 120))
    text = starter_text("forecaster", "user/me", "m", "m.sml")
    text = text.replace("bundled:sunspots_yearly.csv", "s.csv").replace(
        "column: sunspots", "column: value")  # fmt: skip
    text = re.sub(r"  normalise: change.*\n(?: {20,}#.*\n)*", "", text)
    extra = "".join(f"  {k}: {v}\n" for k, v in data.items())
    (tmp_path / "m.sml").write_text(text.replace("  window: 24", extra + "  window: 24"))
    code = main(["train", str(tmp_path / "m.sml"), "--device", "reference", "--store",
                 str(tmp_path / "st")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and words in err[0], err


def test_a_weekly_series_has_its_seasonal_naive_from_the_dates(tmp_path):
    rng = np.random.default_rng()
    n = 200  # a trend hides the cycle from the values' autocorrelation; the dates say 52
    t = np.arange(n)
    raw = _write(tmp_path / "w.csv", 300 + 0.4 * t + 2 * np.sin(2 * np.pi * t / 52)
                 + rng.normal(0, 0.5, n), date(2010, 1, 3), "week")  # fmt: skip
    ds = load_data({"source": str(tmp_path / "w.csv"), "column": "value", "datetime": "when",
                    "window": 8, "horizon": 2, "normalise": "change"})  # fmt: skip
    got = baselines(ds, ["mae"])
    assert got["seasonal_naive"]["season"] == 52
    ends = np.array(ds.val_starts) + 8 - 1
    actual = np.stack([raw[ends + 1], raw[ends + 2]], 1)
    seasonal = np.stack([raw[ends + 1 - 52], raw[ends + 2 - 52]], 1)
    want = np.abs(seasonal - actual).mean()
    assert got["seasonal_naive"]["mae"] == pytest.approx(want, rel=1e-9)
    persistence = np.abs(raw[ends][:, None] - actual).mean()
    assert got["persistence"]["mae"] == pytest.approx(persistence, rel=1e-9)
    assert got["persistence"]["in_sample_mae"] == pytest.approx(
        np.abs(np.diff(raw[: round(n * 0.8)])).mean(), rel=1e-9)  # fmt: skip


def test_a_horizon_edit_carries_the_head_and_a_window_edit_the_inputs():
    text = starter_text("forecaster", "user/me", "m", "m.sml").encode()
    edits = [(("data", "horizon"), 3, "data.horizon=3"), (("data", "window"), 9, "data.window=9")]
    record = check_record(effective_record(text, "m.sml", edits))
    assert record["blocks"]["head"]["n_outputs"] == 3
    assert record["inputs"]["window"]["shape"] == ["batch", 9, 1]


def _train(capsys, record, store):
    code = main(["train", str(record), "--device", "reference", "--store", str(store), "--json"])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    evals = [e for e in map(json.loads, out.splitlines()) if e.get("kind") == "eval"]
    return evals[-1]


def _beats_both(ev):
    mae, base = ev["metrics"]["mae"], ev["baselines"]
    assert mae < base["persistence"]["mae"] and mae < base["seasonal_naive"]["mae"], ev
    assert ev["verdict"]["beats"] == {"persistence": True, "seasonal_naive": True}
    assert ev["verdict"]["mae_ratio"]["persistence"] == pytest.approx(
        mae / base["persistence"]["mae"])  # fmt: skip
    assert ev["verdict"]["text"].startswith("beats persistence")


def test_the_starter_beats_both_baselines_on_a_trend_pointed_at_it_as_is(tmp_path, capsys):
    """The starter with only data.source and data.column changed (a new user's first run)."""
    rng = np.random.default_rng()
    t = np.arange(200)
    _write(tmp_path / "trend.csv", 40 + 0.8 * t + 3 * np.sin(2 * np.pi * t / 12)
           + rng.normal(0, 0.4, 200))  # fmt: skip
    text = starter_text("forecaster", "user/me", "m", "m.sml")
    text = text.replace("bundled:sunspots_yearly.csv", "trend.csv").replace(
        "column: sunspots", "column: value")  # fmt: skip
    (tmp_path / "m.sml").write_text(text)
    ev = _train(capsys, tmp_path / "m.sml", tmp_path / "st")
    _beats_both(ev)
    # the verdict of a record that keeps its old global scale names the cause and the fix
    (tmp_path / "old.sml").write_text(text.replace("normalise: change", "normalise: standard"))
    old = _train(capsys, tmp_path / "old.sml", tmp_path / "st")
    assert old["metrics"]["mae"] > old["baselines"]["persistence"]["mae"]
    assert "outside the training range" in old["verdict"]["text"]
    assert "normalise: change" in old["verdict"]["text"]


def test_init_data_picks_the_options_and_the_record_beats_both(tmp_path, capsys):
    rng = np.random.default_rng()
    # 30 years of months: with 18 the model's edge over seasonal naive (whose error is
    # the noise twice) was within the run-to-run spread of a 300-step training
    t = np.arange(360)
    raw = _write(tmp_path / "seas.csv", 50 + 10 * np.sin(2 * np.pi * t / 12)
                 + rng.normal(0, 1.0, 360))  # fmt: skip
    rec = tmp_path / "sub" / "m.sml"
    assert main(["init", str(rec), "--data", str(tmp_path / "seas.csv"), "--horizon", "2",
                 "--json"]) == 0  # fmt: skip
    got = json.loads(capsys.readouterr().out)
    assert got["data"]["normalise"] == "window" and got["data"]["window"] == 24
    assert "# the level holds" in rec.read_text()
    record = check_record(rec.read_text(), base_dir=rec.parent)
    assert record["blocks"]["head"]["n_outputs"] == 2
    ev = _train(capsys, rec, tmp_path / "st")
    _beats_both(ev)
    assert ev["baselines"]["seasonal_naive"]["season"] == 12
    # the stored run's predictions: the model's forward on frames computed here
    assert main(["runs", "--store", str(tmp_path / "st"), "--json"]) == 0
    rid = json.loads(capsys.readouterr().out)[0]["id"]
    assert main(["predict", rid, "--store", str(tmp_path / "st"), "--device", "reference",
                 "--json"]) == 0  # fmt: skip
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rows = [r for r in rows if r["horizon"] == 1]
    trained = open_run(tmp_path / "st", rid)
    starts = np.arange(len(raw) - 24 + 1)
    win = np.stack([raw[s : s + 24] for s in starts])
    shift, scale = win.mean(1, keepdims=True), win.std(1, keepdims=True)
    with no_grad():
        out = trained.model("reference")(tensor(((win - shift) / scale)[..., None].tolist(),
                                                device="reference"))  # fmt: skip
        pred = np.array(asyncio.run(out.read()))[:, 0] * scale[:, 0] + shift[:, 0]
    got_pred = np.array([r["predicted"] for r in rows])
    np.testing.assert_allclose(got_pred, pred[: len(got_pred)], rtol=1e-6)


def test_init_data_differences_a_moving_season_and_the_record_beats_both(tmp_path, capsys):
    """A strong season on a slow trend: one season back forecasts better than the mean
    of the last two, so init picks the seasonal difference; trained as written, the
    model beats both baselines, and predict maps every step back by its own lag."""
    rng = np.random.default_rng()
    t = np.arange(216)
    raw = _write(tmp_path / "s.csv", 50 + 0.1 * t + 10 * np.sin(2 * np.pi * t / 12 + rng.uniform(
        0, 6)) + rng.normal(0, 0.5, 216))  # fmt: skip
    rec = tmp_path / "m.sml"
    assert main(["init", str(rec), "--data", str(tmp_path / "s.csv"), "--horizon", "2",
                 "--json"]) == 0  # fmt: skip
    got = json.loads(capsys.readouterr().out)
    assert got["data"]["normalise"] == "season" and got["data"]["season"] == 12
    assert "a strong season that moves" in rec.read_text()
    ev = _train(capsys, rec, tmp_path / "st")
    _beats_both(ev)
    assert main(["runs", "--store", str(tmp_path / "st"), "--json"]) == 0
    rid = json.loads(capsys.readouterr().out)[0]["id"]
    assert main(["predict", rid, "--store", str(tmp_path / "st"), "--device", "reference",
                 "--horizon", "3", "--json"]) == 0  # fmt: skip
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    win = np.stack([raw[s : s + 24] for s in range(len(raw) - 24 + 1)])
    x = (win - win.mean(1, keepdims=True)) / win.std(1, keepdims=True)
    spread = np.median(np.abs(win[:, 12:] - win[:, :12]), 1) / 0.6744897501960817
    with no_grad():
        out = open_run(tmp_path / "st", rid).model("reference")(
            tensor(x[..., None].tolist(), device="reference"))  # fmt: skip
        z = np.array(asyncio.run(out.read()))
    pred = z * spread[:, None] + win[:, 12:14]  # step k is shifted by the row 12 - k back
    for k in (1, 2):
        mine = np.array([r["predicted"] for r in rows if r["horizon"] == k and r["actual"]])
        np.testing.assert_allclose(mine, pred[: len(mine), k - 1], rtol=1e-6)
    future = [r["predicted"] for r in rows if r["actual"] is None]  # past the file's end
    np.testing.assert_allclose(future[:2], pred[-1], rtol=1e-6)


def test_the_starter_beats_both_on_its_bundled_real_series(tmp_path, capsys):
    (tmp_path / "m.sml").write_text(starter_text("forecaster", "user/me", "m", "m.sml"))
    _beats_both(_train(capsys, tmp_path / "m.sml", tmp_path / "st"))


def test_init_data_refuses_a_file_it_cannot_use_in_one_line(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("when,name\n2020-01-01,a\n2020-01-02,b\n")
    assert main(["init", str(tmp_path / "m.sml"), "--data", str(tmp_path / "t.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("scellis: error:") and "numeric" in err[0]
    assert not (tmp_path / "m.sml").exists()


def test_a_csv_dropped_in_the_tab_gets_the_normalisation_its_trend_picks(tmp_path, monkeypatch):
    from scellis.webapp import dataset_api  # noqa: PLC0415  (the tab's entry point)

    monkeypatch.chdir(tmp_path)
    # seeded: about 1 noise draw in 150 lifts 3 of the flat series' last 24 rows past the
    # earlier range, which the trend test reads as a drift (bench/RESULTS.md)
    rng = np.random.default_rng(2026)
    t = np.arange(120)
    starter = starter_text("forecaster", "user/me", "m", "m.sml")
    record = re.sub(r"  normalise: change.*\n(?: {20,}#.*\n)*", "", starter)  # names none
    assert "normalise" not in check_record(record)["data"]
    for name, values, mode, words in (
        ("up.csv", 10 + 0.5 * t + rng.normal(0, 0.5, 120), "change", "drifts"),
        ("flat.csv", 5 + np.sin(t / 3) + rng.normal(0, 0.1, 120), "window", "holds"),
        (
            "seas.csv",
            20 + 0.1 * t + 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.5, 120),
            "season",
            "moves",
        ),
    ):
        _write(tmp_path / name, values)
        out = dataset_api.dataset_from(record, name, (tmp_path / name).read_text(), "value",
                                       "when")  # fmt: skip
        assert check_record(out["record"])["data"]["normalise"] == mode
        assert out["dataset"]["advice"]["normalise"] == mode
        assert words in out["dataset"]["advice"]["why"]
        assert out["dataset"]["advice"]["applied"]
        assert check_record(out["record"])["data"].get("season") == (12 if mode == "season"
                                                                     else None)  # fmt: skip
    # the panel's own seasonal difference takes the series' season, or says there is none
    out = dataset_api.dataset_from(record, "seas.csv", (tmp_path / "seas.csv").read_text(),
                                   "value", "when", options={"normalise": "season"})  # fmt: skip
    assert check_record(out["record"])["data"]["season"] == 12
    line = rng.integers(1, 9) + rng.integers(1, 5) * t  # no dates and no cycle at all
    (tmp_path / "line.csv").write_text("value\n" + "".join(f"{v}\n" for v in line))
    with pytest.raises(ScellisError, match="no season shows"):
        dataset_api.dataset_from(record, "line.csv", (tmp_path / "line.csv").read_text(),
                                 "value", options={"normalise": "season"})  # fmt: skip
    # the data panel's own choice stands, and so does the record's (the advice is told)
    out = dataset_api.dataset_from(record, "up.csv", (tmp_path / "up.csv").read_text(), "value",
                                   "when", options={"normalise": "standard"})  # fmt: skip
    assert check_record(out["record"])["data"]["normalise"] == "standard"
    out = dataset_api.dataset_from(starter, "flat.csv", (tmp_path / "flat.csv").read_text(),
                                   "value", "when")  # fmt: skip
    assert check_record(out["record"])["data"]["normalise"] == "change"
    assert out["dataset"]["advice"] == {**out["dataset"]["advice"], "normalise": "window",
                                        "applied": False}  # fmt: skip


def test_init_data_frames_a_noisy_level_by_its_last_value_and_a_short_one_by_short_windows(
    tmp_path, capsys
):  # fmt: skip
    """A level under noise much larger than its steps: the window's mean forecasts better
    than the last row, so init frames each window by its last value. A series of 100
    rows without a season gets windows of 8 rows (a tenth of its 80 training rows)."""
    rng = np.random.default_rng()
    noise = rng.normal(rng.uniform(500, 1500), 150, 300)  # 300: no chance run reads as drift
    line = rng.integers(1, 9) + rng.integers(1, 5) * np.arange(100)  # no cycle at all
    for name, values in (("noise", noise), ("line", line)):
        path = tmp_path / f"{name}.csv"
        path.write_text("year,flow\n" + "".join(f"{1871 + i},{v}\n" for i, v in enumerate(
            values)))  # fmt: skip
        assert main(["init", str(tmp_path / f"{name}.sml"), "--data", str(path), "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        if name == "noise":
            assert got["data"]["normalise"] == "change"
            assert "the level is noisy" in got["why"]["normalise"]
        else:
            assert got["data"]["window"] == 8 and "a tenth" in got["why"]["window"]


def test_the_verdict_names_the_cause_of_each_lost_comparison():
    from scellis.run.verdict import verdict  # noqa: PLC0415

    rng = np.random.default_rng()
    p, s, scale = rng.uniform(1, 2, 3)
    base = {"persistence": {"mae": p, "in_sample_mae": scale, "val_outside_train": 0.4,
                            "normalise": "standard", "window": 6},
            "seasonal_naive": {"mae": s, "in_sample_mae": 2 * scale, "season": 12}}  # fmt: skip
    lost = verdict({"mae": 3.0}, base)
    assert lost["beats"] == {"persistence": False, "seasonal_naive": False}
    assert lost["mae_ratio"]["seasonal_naive"] == pytest.approx(3.0 / s)
    assert lost["mase"]["persistence"] == pytest.approx(3.0 / scale)
    assert "40% of the validation values" in lost["text"] and "normalise: change" in lost["text"]
    base["persistence"].update(val_outside_train=0.0, normalise="change")
    base["seasonal_naive"]["mae"] = p / 2  # a model between the two: the season is missed
    half = verdict({"mae": 0.75 * p}, base)
    assert half["beats"] == {"persistence": True, "seasonal_naive": False}
    assert "shorter than the season (12)" in half["text"]
    base["persistence"]["window"] = 24
    assert "train longer" in verdict({"mae": 0.75 * p}, base)["text"]
    won = verdict({"mae": 0.25 * p}, base)
    assert won["text"].startswith("beats persistence") and "season 12" in won["text"]
    assert verdict({"rmse": 1.0}, base) is None
