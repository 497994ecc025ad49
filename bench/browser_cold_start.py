"""Where a cold tab's time goes before its first finished training step (headless Chromium).

Each run is a fresh browser profile on the built site: navigation, the page's script,
the engine worker's start-up (Pyodide, wheels, run store, Python imports, WebGPU adapter
and device: the worker's performance marks), then ``bench_train_step`` called as soon as
the engine is ready, whose first step is split into model build, encoding (the step's
ops run on the host, pipelines created) and the wait for the first loss (compiles
finishing, GPU work). Every figure is ms since navigation start unless it says otherwise;
the table gives the median over ``--runs``.

    PYTHONPATH=src python3 bench/browser_cold_start.py [--runs 3] [--model char_tf --tiny]
        [--site DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_train_step import ROOT, browser, serve  # noqa: E402
from browser_workloads import TINY  # noqa: E402

CALL = """async ([m, shape]) => {
  const hello = await window.scellisClient.ready();
  const called = performance.now();
  const r = await window.scellisClient.call('bench_train_step',
    {model: m, steps: 1, repeats: 1, shape});
  return {marks: hello.boot_marks, called, r};
}"""


def one_run(pw, url: str, model: str, shape: dict) -> dict:
    profile = tempfile.mkdtemp(prefix="scellis-cold-")
    ctx = browser(pw, profile)
    try:
        page = ctx.new_page()
        page.goto(url)
        out = page.evaluate(CALL, [model, shape])
    finally:
        ctx.close()
        shutil.rmtree(profile, ignore_errors=True)
    r, marks = out["r"], dict(out["marks"])
    marks["step:called"] = out["called"]
    for k in ("build_ms", "encode_ms", "wait_ms"):
        marks[f"first step: {k}"] = r["first_step"][k]
    marks["first step: pipelines"] = r["first_step"]["pipelines"]
    marks["first step done"] = out["called"] + r["first_step_ms"]
    return marks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", default="char_tf")
    ap.add_argument("--tiny", action="store_true", help="the model at its smoke-check size")
    ap.add_argument("--site", help="a built site (default: build one now)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    site = Path(a.site) if a.site else Path(tempfile.mkdtemp(prefix="scellis-site-")) / "s"
    if not a.site:
        sys.path.insert(0, str(ROOT / "src"))
        from scellis.cli.site_build import build_site

        build_site(site)
    httpd, url = serve(site)
    shape = TINY.get(a.model, {}) if a.tiny else {}
    try:
        with sync_playwright() as pw:
            runs = [one_run(pw, url, a.model, shape) for _ in range(a.runs)]
    finally:
        httpd.shutdown()
    if a.json:
        print(json.dumps(runs, indent=1))
        return 0
    keys = sorted(runs[0], key=lambda k: (":" in k and k.startswith("first step:"), runs[0][k]))
    for k in keys:
        vals = [r[k] for r in runs if k in r]
        print(f"{k:<26} {statistics.median(vals):9.0f}   " + " ".join(f"{v:8.0f}" for v in vals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
