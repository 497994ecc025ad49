"""The default Scellis forecaster against the naive baselines and statsforecast's
AutoETS and AutoTheta on real public series, one-step and multi-step, in one table.

Each series is one that an installable package ships (statsmodels' datasets and
statsforecast's AirPassengers: nothing is downloaded), written as a two-column CSV.
The Scellis model is what a new user gets: ``scellis init m.sml --data FILE --horizon H``
and ``scellis train m.sml --device reference``, nothing edited. Its MAE is the final
validation pass's, over the validation windows training cut (inputs and targets all in
the most recent 20% of rows). Every other forecaster predicts from the same origins
(each window's last input row) the same ``H`` rows:

- persistence repeats the origin's value; seasonal naive the value one season earlier
  (the season Scellis found: from the dates, else the autocorrelation);
- AutoETS and AutoTheta are fitted once on the training rows (before the split) and
  applied without refitting to the series up to each origin (``forward``), as the
  trained network is.

MASE divides an MAE by the in-sample one-step naive MAE of the training rows (so
persistence's one-step MASE is near 1 where the validation part moves as the training
part did). The ratio columns are Scellis' MAE over the named forecaster's. One-step uses
a model trained with ``--horizon 1``, multi-step one trained with ``--horizon H``
(``H`` = the season when it is at most 12, else 8).

    pip install -e '.[bench]'
    PYTHONPATH=src python3 bench/forecast.py --out bench/out/forecast.json

``--series`` picks some (comma-separated names), ``--write-results`` appends the table to
bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np

from scellis.cli.main import main as scellis

HERE = Path(__file__).resolve().parent


def _monthly(start: tuple[int, int], n: int) -> list[str]:
    y, m = start
    out = []
    for _ in range(n):
        out.append(f"{y:04d}-{m:02d}-01")
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def _quarterly(start_year: int, n: int) -> list[str]:
    return [f"{start_year + i // 4:04d}-{3 * (i % 4) + 1:02d}-01" for i in range(n)]


def series() -> dict:
    """``{name: (dates, values, note)}``: dates as ISO days or years."""
    import statsmodels.api as sm  # noqa: PLC0415  (bench only: statsmodels' bundled data)
    from statsforecast.utils import AirPassengers  # noqa: PLC0415

    out = {}
    air = np.asarray(AirPassengers, dtype=float)
    out["air_passengers"] = (_monthly((1949, 1), len(air)), air, "monthly, statsforecast")
    nile = sm.datasets.nile.load_pandas().data
    out["nile"] = ([str(int(y)) for y in nile["year"]], nile["volume"].to_numpy(float),
                   "yearly flow, statsmodels")  # fmt: skip
    sun = sm.datasets.sunspots.load_pandas().data
    out["sunspots"] = ([str(int(y)) for y in sun["YEAR"]], sun["SUNACTIVITY"].to_numpy(float),
                       "yearly, statsmodels")  # fmt: skip
    macro = sm.datasets.macrodata.load_pandas().data
    q = _quarterly(int(macro["year"].iloc[0]), len(macro))
    for col, name in (("realgdp", "us_gdp"), ("cpi", "us_cpi"), ("unemp", "us_unemployment")):
        out[name] = (q, macro[col].to_numpy(float), f"quarterly {col}, statsmodels macrodata")
    co2 = sm.datasets.co2.load_pandas().data["co2"].resample("MS").mean().ffill()
    out["co2"] = ([d.date().isoformat() for d in co2.index], co2.to_numpy(float),
                  "monthly means of the weekly Mauna Loa series, statsmodels")  # fmt: skip
    from statsmodels.datasets import elec_equip  # noqa: PLC0415  (not in the api namespace)

    elec = elec_equip.load_pandas().data.iloc[:, 0]
    out["elec_equip"] = (_monthly((elec.index[0].year, elec.index[0].month), len(elec)),
                         elec.to_numpy(float), "monthly orders, statsmodels")  # fmt: skip
    nino = sm.datasets.elnino.load_pandas().data
    temps = nino.iloc[:, 1:].to_numpy(float).ravel()
    out["elnino"] = (_monthly((int(nino["YEAR"].iloc[0]), 1), len(temps)), temps,
                     "monthly sea surface temperature, statsmodels")  # fmt: skip
    return out


def _quiet_main(args: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = scellis(args)
    return code, buf.getvalue()


def train_default(csv: Path, horizon: int, work: Path) -> dict:
    """The final validation event of the record ``init --data`` writes for ``csv``."""
    record = work / f"h{horizon}.sml"
    code, out = _quiet_main(["init", str(record), "--data", str(csv), "--horizon",
                             str(horizon), "--force", "--json"])  # fmt: skip
    if code:
        raise SystemExit(f"init --data {csv} failed: {out}")
    advice = json.loads(out)
    t0 = time.perf_counter()
    code, out = _quiet_main(["train", str(record), "--device", "reference", "--store",
                             str(work / "store"), "--json"])  # fmt: skip
    seconds = time.perf_counter() - t0
    if code:
        raise SystemExit(f"train {record} failed: {out[-2000:]}")
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    final = [e for e in events if e.get("kind") == "eval"][-1]
    return {"advice": advice["data"], "eval": final, "seconds": seconds}


def _stat_forecasts(train: np.ndarray, values: np.ndarray, ends: list[int], horizon: int,
                    season: int | None) -> dict:  # fmt: skip
    """AutoETS's and AutoTheta's forecasts of ``horizon`` rows after each origin in
    ``ends``, fitted on ``train`` only."""
    from statsforecast.models import AutoETS, AutoTheta  # noqa: PLC0415

    m = season or 1
    out = {}
    for name, model in (("auto_ets", AutoETS(season_length=m)),
                        ("auto_theta", AutoTheta(season_length=m))):  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(train)
            out[name] = np.stack([model.forward(values[: e + 1], h=horizon)["mean"]
                                  for e in ends])  # fmt: skip
    return out


def score(values: np.ndarray, cut: int, length: int, horizon: int, season: int | None,
          model_mae: float) -> dict:  # fmt: skip
    """Every forecaster's MAE over the validation windows ``load_csv`` cuts."""
    starts = range(cut, len(values) - length - horizon + 1)
    ends = [s + length - 1 for s in starts]
    actual = np.stack([values[e + 1 : e + 1 + horizon] for e in ends])
    preds = {"persistence": np.repeat(values[ends][:, None], horizon, 1)}
    if season:
        preds["seasonal_naive"] = np.stack([
            [values[e + h - season * ((h - 1) // season + 1)] for h in range(1, horizon + 1)]
            for e in ends])  # fmt: skip
    preds.update(_stat_forecasts(values[:cut], values, ends, horizon, season))
    mae = {k: float(np.abs(p - actual).mean()) for k, p in preds.items()}
    mae["scellis"] = model_mae
    scale = float(np.abs(np.diff(values[:cut])).mean())
    return {"mae": mae, "mase": {k: v / scale for k, v in mae.items()}, "windows": len(ends)}


def bench_series(name: str, dates, values, work: Path, horizons: list[int]) -> dict:
    csv = _write_csv(work, name, dates, values)
    row: dict = {"series": name, "rows": len(values)}
    for key, horizon in zip(("one", "multi"), horizons):
        got = train_default(csv, horizon, work)
        ev, adv = got["eval"], got["advice"]
        base = ev["baselines"]
        season = (base.get("seasonal_naive") or {}).get("season")
        cut = round(len(values) * 0.8)
        s = score(values, cut, adv["window"], horizon, season, ev["metrics"]["mae"])
        # the same windows as the run's own baselines, or the comparison means nothing
        assert abs(s["mae"]["persistence"] - base["persistence"]["mae"]) <= 1e-6 * (
            1 + s["mae"]["persistence"]), (name, s["mae"], base)  # fmt: skip
        row.update(season=season, window=adv["window"], normalise=adv["normalise"])
        row[key] = {**s, "horizon": horizon, "train_s": got["seconds"],
                    "verdict": (ev.get("verdict") or {}).get("text")}  # fmt: skip
    return row


def horizons_for(season: int | None) -> list[int]:
    return [1, season if season and season <= 12 else 8]


def _r(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def table(rows: list[dict]) -> str:
    head = (
        "| series | rows | season | window | normalise | H | MASE 1-step: Scellis / "
        "persist / snaive / ETS / Theta | MASE H-step: Scellis / persist / snaive / ETS / "
        "Theta | Scellis MAE / persist, snaive, ETS (1-step) | (H-step) |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        cells = [r["series"], str(r["rows"]), str(r["season"] or "—"), str(r["window"]),
                 r["normalise"], str(r["multi"]["horizon"])]  # fmt: skip
        for key in ("one", "multi"):
            m = r[key]["mase"]
            cells.append(
                " / ".join(
                    _r(m.get(k))
                    for k in ("scellis", "persistence", "seasonal_naive", "auto_ets", "auto_theta")
                )
            )
        for key in ("one", "multi"):
            a = r[key]["mae"]
            cells.append(
                ", ".join(
                    _r(a["scellis"] / a[k]) if k in a else "—"
                    for k in ("persistence", "seasonal_naive", "auto_ets")
                )
            )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    out = []
    for key, what in (("one", "one-step"), ("multi", "multi-step")):
        lost_p = [r["series"] for r in rows if r[key]["mae"]["scellis"]
                  >= r[key]["mae"]["persistence"]]  # fmt: skip
        lost_s = [r["series"] for r in rows if "seasonal_naive" in r[key]["mae"]
                  and r[key]["mae"]["scellis"] >= r[key]["mae"]["seasonal_naive"]]  # fmt: skip
        ets = statistics.median(r[key]["mae"]["scellis"] / r[key]["mae"]["auto_ets"]
                                for r in rows)  # fmt: skip
        worse = [
            f"{r['series']} {r[key]['mae']['scellis'] / r[key]['mae']['auto_ets']:.2f}"
            for r in rows
            if r[key]["mae"]["scellis"] > 1.1 * r[key]["mae"]["auto_ets"]
        ]
        out.append(
            f"- {what}: beats persistence on {len(rows) - len(lost_p)}/{len(rows)}"
            f"{' (not: ' + ', '.join(lost_p) + ')' if lost_p else ''}; beats seasonal naive on "
            f"{sum('seasonal_naive' in r[key]['mae'] for r in rows) - len(lost_s)}/"
            f"{sum('seasonal_naive' in r[key]['mae'] for r in rows)} with a season"
            f"{' (not: ' + ', '.join(lost_s) + ')' if lost_s else ''}; median MAE / AutoETS "
            f"{ets:.2f}{' (over 1.1x: ' + ', '.join(worse) + ')' if worse else ''}"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", default="", help="comma-separated names (default: all)")
    ap.add_argument("--work", default=str(HERE / "out" / "forecast"), help="CSVs, records, runs")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    ap.add_argument("--write-results", action="store_true", help="append to bench/RESULTS.md")
    a = ap.parse_args(argv)
    data = series()
    names = [n for n in a.series.split(",") if n] or list(data)
    rows, t0 = [], time.perf_counter()
    for name in names:
        dates, values, _ = data[name]
        work = Path(a.work) / name
        # the season decides the multi-step horizon
        season = _season_of(_write_csv(work, name, dates, values))
        row = bench_series(name, dates, values, work, horizons_for(season))
        rows.append(row)
        print(f"{name}: 1-step MASE {row['one']['mase']['scellis']:.2f} "
              f"(ETS {row['one']['mase']['auto_ets']:.2f}), {row['multi']['horizon']}-step "
              f"{row['multi']['mase']['scellis']:.2f} (ETS {row['multi']['mase']['auto_ets']:.2f})"
              f", trained in {row['one']['train_s'] + row['multi']['train_s']:.0f} s",
              flush=True)  # fmt: skip
    text = table(rows) + "\n\n" + summary(rows)
    print(text)
    print(f"total {time.perf_counter() - t0:.0f} s")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(rows, indent=1))
    if a.write_results:
        _append_results(text, a, time.perf_counter() - t0)
    return 0


def _write_csv(work: Path, name: str, dates, values) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    csv = work / f"{name}.csv"
    csv.write_text("date,value\n" + "".join(f"{d},{float(v)!r}\n" for d, v in zip(dates, values)))
    return csv


def _season_of(csv: Path) -> int | None:
    from scellis.data.advice import advise  # noqa: PLC0415

    return advise(csv)["season"]


def _append_results(text: str, a, seconds: float) -> None:
    cmd = "PYTHONPATH=src python3 bench/forecast.py" + (f" --series {a.series}" if a.series else "")
    head = (f"\n## Forecasts: the default forecaster against the baselines\n\n"
            f"### {date.today().isoformat()} — {platform.node() or 'host'}, "
            f"{os.cpu_count()} CPU cores, {platform.python_version()}, reference device\n\n"
            f"Command: `{cmd}` ({seconds:.0f} s)\n\n")  # fmt: skip
    with open(HERE / "RESULTS.md", "a", encoding="utf-8") as f:
        f.write(head + text + "\n")


if __name__ == "__main__":
    sys.exit(main())
