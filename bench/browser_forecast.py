"""Seconds the tab's "Show forecast" takes for a long series, in headless Chromium.

What a user waits for after training a forecaster on a long daily series: a generated
series of ``--rows`` daily values (trend, a weekly cycle, noise) gets the record
``scellis init --data`` writes for it and trains a few steps natively (the weights do
not change the work a forecast does); its run travels into the tab's store as a bundle.
In the tab (WebGPU on SwiftShader here) the run is picked and "Show forecast" pressed
with a horizon of ``--horizon``: one-step predictions over every window of the series,
then the recursive forecast past its end, drawn. The time is from the click to the
chart showing the forecast's points, read on the page's clock; the first press pays
the kernels' compiles, the later ones (same run, same horizon, the page's cache
cleared) do not.

    PYTHONPATH=src python3 bench/browser_forecast.py [--rows 8934] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import random
import shutil
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from browser_train_step import FLAGS  # noqa: E402 - the same Chromium flags as the step bench

CHROMIUM = "/usr/bin/chromium"
BOOT_MS = 600_000  # Pyodide and the wheels on a loaded 2-core machine
STORE = "/scellis/store"


def write_series(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    start = date(2000, 1, 1)
    lines = ["date,value"]
    for t in range(rows):
        v = 100 + 0.01 * t + 5 * math.sin(2 * math.pi * t / 7) + rng.gauss(0, 1)
        lines.append(f"{start + timedelta(days=t)},{v:.4f}")
    path.write_text("\n".join(lines) + "\n")


def trained_bundle(folder: Path, rows: int) -> tuple[str, bytes, dict]:
    """(run id, its bundle, the data options init chose) of the starter on the series."""
    from scellis.cli.main import main
    from scellis.store import bundle
    from scellis.store.objects import ObjectStore
    from scellis.store.records import Records

    write_series(folder / "s.csv", rows)
    rec, store = folder / "m.sml", folder / "store"
    if main(["init", str(rec), "--data", str(folder / "s.csv"), "--json"]) != 0:
        raise SystemExit("init --data failed")
    argv = ["train", str(rec), "--device", "reference", "--store", str(store),
            "--max-steps", "3", "--no-validate", "--json"]  # fmt: skip
    if main(argv) != 0:
        raise SystemExit("training failed")
    records = Records(store)
    try:
        (run,) = records.runs()
        raw = bundle.export_run(ObjectStore(store), records, run["id"])
    finally:
        records.close()
    from scellis.sml import parse

    return run["id"], raw, parse(rec.read_text(), "m.sml").data["data"]


def press(page, horizon: int) -> float:
    """Seconds from pressing Show forecast to the chart showing ``horizon`` points."""
    page.evaluate("window.scellisApp.use.result = null")  # the panel's cached answer
    page.evaluate("document.querySelector('#use-plot').innerHTML = ''")
    page.fill("#use-horizon", str(horizon))
    t0 = page.evaluate("performance.now()")
    page.click("#use-forecast")
    page.wait_for_function(
        "h => { const s = document.querySelector('#use-plot svg');"
        " return s && s.dataset.forecastPoints === String(h); }",
        arg=horizon, timeout=BOOT_MS, polling=50,
    )  # fmt: skip
    return (page.evaluate("performance.now()") - t0) / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8934)
    ap.add_argument("--horizon", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from scellis.cli.serve import serve_in_thread
    from scellis.cli.site_build import build_site

    work = Path(tempfile.mkdtemp(prefix="scellis-forecast-"))
    rid, raw, data = trained_bundle(work, args.rows)
    build_site(work / "site")
    server = serve_in_thread(work / "site")
    times = []
    try:
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(
                str(work / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
            )
            page = ctx.new_page()
            page.set_viewport_size({"width": 1440, "height": 900})
            page.goto(f"http://127.0.0.1:{server.server_port}/")
            page.wait_for_function("document.body.dataset.engine", timeout=BOOT_MS)
            if page.evaluate("document.body.dataset.engine") != "ready":
                raise SystemExit(f"the engine failed: {page.inner_text('#banner')}")
            page.evaluate(
                "async ([data, store]) => { await window.scellisClient.call('import_run',"
                " {data, store}); await window.scellisApp.run.runs.refresh(); }",
                [base64.b64encode(raw).decode(), STORE],
            )
            page.select_option("#use-run", rid)
            page.wait_for_function(
                "r => window.scellisApp.use.info && window.scellisApp.use.info.run === r",
                arg=rid,
            )
            for i in range(args.repeats):
                times.append(press(page, args.horizon))
                print(f"# press {i + 1}: {times[-1]:.2f} s", flush=True)
            ctx.close()
    finally:
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    out = {"rows": args.rows, "horizon": args.horizon, "data": data, "seconds": times}
    if args.json:
        print(json.dumps(out))
    print(
        f"| rows | window | normalise | horizon | first press, s | later presses, s |\n"
        f"|---|---|---|---|---|---|\n| {args.rows} | {data['window']} | {data['normalise']} "
        f"| {args.horizon} | {times[0]:.1f} | {', '.join(f'{t:.1f}' for t in times[1:])} |"
    )


if __name__ == "__main__":
    main()
