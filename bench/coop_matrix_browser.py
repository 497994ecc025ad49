"""Chromium's subgroup matrices (``chromium-experimental-subgroup-matrix``) in a tab: whether
the adapter offers them, the configurations it lists, and a checked f16 matmul in them.

Used by bench/coop_matrix.py. The browser is launched as bench/browser_gpu.py launches it:
``--chromium BINARY`` here (Debian's Chromium on SwiftShader), or ``--browser-root ROOT``
on a GPU host where browser_gpu.py's payload (the headless shell and the libraries it
needs) is unpacked, with that script's setup and flag sets. ``--enable-unsafe-webgpu``
(in browser_gpu's common flags) is what turns on Blink's experimental WebGPU features and
the experimental WGSL extensions; each flag set is visited twice, as it is and with
Dawn's ``use_vulkan_memory_model`` toggle, which Dawn's own subgroup-matrix tests turn on
for Vulkan.

The page asks for a high-performance adapter, records ``adapter.features`` and
``adapter.info.subgroupMatrixConfigs``, and where the feature is there, for each float
configuration: a (4M x 8K) @ (8K x 4N) product, one workgroup of ``subgroupMaxSize``
invocations per M x N block, on inputs that are multiples of 1/256 (exact in f16); the
inputs and the result come back and are checked against NumPy with bench/coop_matrix.py's
bound (err/bound <= 1). Then a rough speed: 10 dispatches of a 2048^3 product
(2 x 2 blocks a workgroup) between two ``onSubmittedWorkDone`` (wall time, launches
included).
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import tempfile
import threading
from pathlib import Path

import browser_gpu
import numpy as np

FEATURE = "chromium-experimental-subgroup-matrix"
# each flag set as it is, and with the Dawn toggle Dawn's Vulkan subgroup-matrix tests use
EXTRAS = {"plain": [], "vulkan-memory-model": ["--enable-dawn-features=use_vulkan_memory_model"]}

PAGE_JS = Path(__file__).with_name("coop_matrix_page.js").read_text()

PAGE_HTML = (
    '<!doctype html><meta charset="utf-8"><title>subgroup matrix</title><body><script>'
    + browser_gpu.POST_JS
    + PAGE_JS
    + "</script>"
)


def checked(visit: dict, err_over_bound) -> dict:
    """The visit with each run's arrays replaced by ``err_over_bound(c, a, b, result type)``
    (bench/coop_matrix.py's check, against NumPy)."""
    for run in visit.get("runs", []):
        if "c" in run:
            m, k, n = run["shape"]
            a = np.array(run["a"], dtype=np.float64).reshape(m, k)
            b = np.array(run["b"], dtype=np.float64).reshape(k, n)
            c = np.array(run["c"], dtype=np.float64).reshape(m, n)
            run["err_over_bound"] = err_over_bound(c, a, b, run["config"]["resultComponentType"])
            run["inputs_nonzero"] = int(np.count_nonzero(a))
            for key in ("a", "b", "c"):
                del run[key]
    return visit


def _serve(folder: str):
    handler = functools.partial(browser_gpu.Handler, directory=folder)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


def _version(chrome: Path, env: dict) -> str:
    try:
        r = subprocess.run([str(chrome), "--version"], capture_output=True, text=True, env=env,
                           timeout=30)  # fmt: skip
        return r.stdout.strip() or r.stderr.strip()[-200:]
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"


def _launcher(args, log):
    """(browser, flag set names) for ``--browser-root`` or ``--chromium``; None for neither."""
    if args.browser_root:
        root = Path(args.browser_root).resolve()
        env = browser_gpu._setup(root, log, not args.no_install_gl)
        return browser_gpu.Browser(root, log, env), (args.flag_sets or "vulkan-swcomp")
    if args.chromium:
        env = {**os.environ, "HOME": os.environ.get("HOME", "/tmp")}
        b = browser_gpu.Browser(Path(tempfile.gettempdir()), log, env)
        b.chrome = Path(args.chromium)
        return b, (args.flag_sets or "swiftshader")
    return None


def browser_report(args, err_over_bound) -> dict:
    log_path = Path(args.out).with_suffix(".chrome_log.txt")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        got = _launcher(args, log)
        if got is None:
            return {"skipped": "no --chromium or --browser-root given"}
        browser, sets = got
        folder = tempfile.mkdtemp(prefix="coop-matrix-page-")
        (Path(folder) / "coop.html").write_text(PAGE_HTML)
        httpd, url = _serve(folder)
        visits = []
        try:
            for name in sets.split(","):
                for extra, flags in EXTRAS.items():
                    r = browser.visit(f"{url}/coop.html", browser_gpu.FLAG_SETS[name] + flags,
                                      args.browser_timeout, f"coop {name} {extra}")  # fmt: skip
                    every = browser_gpu.COMMON + browser_gpu.FLAG_SETS[name] + flags
                    visit = {"flag_set": name, "extra": extra, "flags": every, **r}
                    visits.append(checked(visit, err_over_bound))
        finally:
            httpd.shutdown()
    return {"browser": _version(browser.chrome, browser.env), "chrome_log": str(log_path),
            "visits": visits}  # fmt: skip


def _config(c: dict) -> str:
    return f"{c['M']}x{c['N']}x{c['K']} {c['componentType']}->{c['resultComponentType']}"


def browser_summary(r: dict) -> list[str]:
    if "skipped" in r:
        return [f"browser: skipped ({r['skipped']})"]
    lines = [f"browser: {r['browser']}"]
    for v in r["visits"]:
        a = v.get("adapter") or {}
        head = f"browser [{v['flag_set']}, {v['extra']}]: {a.get('vendor')} {a.get('architecture')}"
        if "error" in v or not a:
            lines.append(f"{head}: {v.get('error', 'no adapter')}")
            continue
        configs = "; ".join(map(_config, v.get("configs", [])))
        offered = "offered" if v.get("has_feature") else "absent"
        exposed = "exposed" if v.get("info_has_configs") else "absent"
        sizes = f"{a.get('subgroupMinSize')}-{a.get('subgroupMaxSize')}"
        listing = f": {configs}" if configs else ""
        lines.append(f"{head} (subgroups {sizes}): {FEATURE} {offered}; "
                     f"info.subgroupMatrixConfigs {exposed}{listing}")  # fmt: skip
        for run in v.get("runs", []):
            what = (
                run.get("error") or run.get("skipped") or f"err/bound {run['err_over_bound']:.3f}"
            )
            if "speed" in run:
                s = run["speed"]
                what += f"; {s['n']}^3 {s['tflops']:.1f} TFLOP/s ({s['ms_per_dispatch']:.2f} ms)"
            lines.append(f"  {_config(run['config'])}: {what}")
    return lines
