"""Where a cold tab's time goes before its first finished training step (headless Chromium).

Each run is a fresh browser profile on the built site: navigation, the page's script,
the engine worker's start-up (Pyodide, wheels, run store, Python imports, WebGPU adapter
and device: the worker's performance marks), then ``bench_train_step`` called as soon as
the engine is ready, whose first step is split into model build, encoding (the step's
ops run on the host, pipelines created) and the wait for the first loss (compiles
finishing, GPU work). Every figure is ms since navigation start unless it says otherwise;
the table gives the median over ``--runs``.

``--site`` may be given several times (``NAME=DIR`` or ``DIR``, named by its folder):
the sites' runs then alternate, round by round, in one process (so a busy spell of a
shared machine falls on every site alike), and the table has one median column a site.
Each site's Python start is said by ``boot: from snapshot`` (1) or afresh (0).

    PYTHONPATH=src python3 bench/browser_cold_start.py [--runs 3] [--model char_tf --tiny]
        [--site [NAME=]DIR ...] [--json]
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
  return {marks: hello.boot_marks, called, r, path: hello.boot_path};
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
    marks["boot: from snapshot"] = int((out.get("path") or {}).get("from") == "snapshot")
    return marks


def site_list(given: list[str] | None) -> dict[str, Path]:
    """{name: built site}: the ``--site`` arguments, or one site built now."""
    if not given:
        site = Path(tempfile.mkdtemp(prefix="scellis-site-")) / "s"
        sys.path.insert(0, str(ROOT / "src"))
        from scellis.cli.site_build import build_site

        build_site(site, extra_packages=[ROOT / "bench" / "tab" / "tabbench"])  # bench_train_step
        return {"site": site}
    out = {}
    for arg in given:
        name, _, folder = arg.rpartition("=")
        out[name or Path(folder).name] = Path(folder)
    return out


def order(runs: list[dict]) -> list[str]:
    """Every mark of ``runs`` in time order (median), the first step's parts and counts last."""
    keys = {k for r in runs for k in r}
    return sorted(
        keys,
        key=lambda k: (
            k.startswith(("first step:", "boot:")),
            statistics.median(r[k] for r in runs if k in r),
        ),
    )


def print_one(runs: list[dict]) -> None:
    for k in order(runs):
        vals = [r[k] for r in runs if k in r]
        print(f"{k:<26} {statistics.median(vals):9.0f}   " + " ".join(f"{v:8.0f}" for v in vals))


def print_sites(results: dict[str, list[dict]]) -> None:
    """A markdown table: one row a mark, one median column a site."""
    names = list(results)
    keys = order([r for runs in results.values() for r in runs])
    print("| ms since navigation (median) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for k in keys:
        cells = []
        for n in names:
            vals = [r[k] for r in results[n] if k in r]
            cells.append(f"{statistics.median(vals):,.0f}" if vals else "–")
        print(f"| {k} | " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", default="char_tf")
    ap.add_argument("--tiny", action="store_true", help="the model at its smoke-check size")
    ap.add_argument(
        "--site",
        action="append",
        help="[NAME=]DIR of a built site, repeatable (default: build one now)",
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    sites = site_list(a.site)
    servers = {name: serve(folder) for name, folder in sites.items()}
    shape = TINY.get(a.model, {}) if a.tiny else {}
    results: dict[str, list[dict]] = {name: [] for name in sites}
    try:
        with sync_playwright() as pw:
            for _ in range(a.runs):
                for name, (_, url) in servers.items():
                    results[name].append(one_run(pw, url, a.model, shape))
    finally:
        for httpd, _ in servers.values():
            httpd.shutdown()
    if a.json:
        print(json.dumps(results, indent=1))
    elif len(results) == 1:
        print_one(next(iter(results.values())))
    else:
        print_sites(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
