"""Seconds from a cold load of the tab to its first loss point and first validation point.

What a newcomer waits for: a fresh browser profile (nothing cached, no speed measured
yet) opens the site, picks an example, and presses Train as soon as the engine is
ready; the default quick run (a two-step speed calibration, then about 45 s of steps
with about three validations) draws its first loss point and its first validation
point. Times are from navigation start (``performance.now()`` in the page) to the run
event that draws the point, read by a listener on the page's own event bus. Each row is
one fresh profile; Chromium headless, WebGPU on SwiftShader (CPU) here.

    PYTHONPATH=src python3 bench/browser_first_points.py
        [--examples lstm_forecaster,char_transformer] [--repeats 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from browser_train_step import FLAGS  # noqa: E402 - the same Chromium flags as the step bench

CHROMIUM = "/usr/bin/chromium"
RUN_MS = 900_000  # a quick run's first validation on a software GPU, with room
# marks each run event's arrival on the page's clock (navigation start is 0)
MARKS = """
window.__marks = [];
const hook = setInterval(() => {
  if (!window.scellisApp) return;
  clearInterval(hook);
  window.scellisApp.on("engine", () => window.__marks.push(["engine", performance.now()]));
  window.scellisApp.on("run-event",
    (ev) => window.__marks.push([ev.kind, performance.now(), ev.step]));
}, 5);
"""


def first(marks: list, kind: str) -> tuple[float, int | None] | None:
    for m in marks:
        if m[0] == kind:
            return m[1] / 1000, (m[2] if len(m) > 2 else None)
    return None


def one(p, url: str, example: str) -> dict:
    """One cold load in a fresh profile: seconds to engine ready, first loss, first val."""
    profile = tempfile.mkdtemp(prefix="scellis-cold-")
    ctx = p.chromium.launch_persistent_context(
        profile, executable_path=CHROMIUM, headless=True, args=FLAGS
    )
    try:
        page = ctx.new_page()
        page.set_viewport_size({"width": 1440, "height": 900})
        page.add_init_script(MARKS)
        page.goto(url)
        page.wait_for_function("document.body.dataset.engine", timeout=RUN_MS)
        if page.evaluate("document.body.dataset.engine") != "ready":
            raise SystemExit(f"the engine failed: {page.inner_text('#banner')}")
        if example != page.input_value("#run-example"):
            page.select_option("#run-example", example)
            page.wait_for_function("n => window.scellisApp.recordName === n", arg=example)
        page.wait_for_function("!document.getElementById('run-train').disabled")
        page.click("#run-train")
        page.wait_for_function(
            "window.__marks.some(m => m[0] === 'eval')", timeout=RUN_MS, polling=200
        )
        marks = page.evaluate("window.__marks")
        loss, val = first(marks, "log"), first(marks, "eval")
        return {
            "example": example,
            "engine_s": first(marks, "engine")[0],
            "first_loss_s": loss[0],
            "first_loss_step": loss[1],
            "first_val_s": val[0],
            "first_val_step": val[1],
            "steps": page.evaluate("window.scellisApp.quickRun.steps"),
        }
    finally:
        ctx.close()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", default="lstm_forecaster,char_transformer")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from scellis.cli.serve import serve_in_thread
    from scellis.cli.site_build import build_site

    site = Path(tempfile.mkdtemp(prefix="scellis-site-")) / "site"
    build_site(site)
    server = serve_in_thread(site)
    url = f"http://127.0.0.1:{server.server_port}/"
    rows = []
    try:
        with sync_playwright() as p:
            for example in args.examples.split(","):
                for _ in range(args.repeats):
                    t0 = time.monotonic()
                    rows.append(one(p, url, example))
                    print(f"# {example}: {rows[-1]} ({time.monotonic() - t0:.0f} s)", flush=True)
    finally:
        server.shutdown()
        shutil.rmtree(site.parent, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    print("| example | run | engine ready, s | first loss, s (step) | first validation, s (step) |")
    print("|---|---|---|---|---|")
    for i, r in enumerate(rows):
        print(f"| {r['example']} | {i % args.repeats + 1} | {r['engine_s']:.1f} | "
              f"{r['first_loss_s']:.1f} ({r['first_loss_step']}) | "
              f"{r['first_val_s']:.1f} ({r['first_val_step']}) |")  # fmt: skip
    for example in args.examples.split(","):
        mine = [r for r in rows if r["example"] == example]
        loss = statistics.median(r["first_loss_s"] for r in mine)
        val = statistics.median(r["first_val_s"] for r in mine)
        print(f"# {example} median: first loss {loss:.1f} s, first validation {val:.1f} s")


if __name__ == "__main__":
    main()
