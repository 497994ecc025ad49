"""Milliseconds per training step in headless Chromium: Scellis (Pyodide + WebGPU) vs tf.js.

Models (the same as bench/train_step.py's LSTM rows): ``seed_lstm`` LSTM(8) on [32, 5, 1]
and ``lstm2x64`` 2-layer LSTM(64) on [64, 32, 1], Linear to 1, MSE, Adam. tf.js 4.22
runs on its webgpu, webgl and wasm backends (npm packages in bench/browser/); Scellis runs
in its Web Worker on the page's WebGPU adapter. Timing: ``--steps`` steps then one loss
readback, median of ``--repeats`` blocks. "First step" is from a cold start to the first
loss on the host: Pyodide start + wheel install + shader compiles for Scellis, backend
set-up + first step for tf.js. On this machine WebGPU is SwiftShader (CPU).

``--replay`` adds "Scellis (WebGPU, replay)" rows: the same step as a recorded dispatch
schedule (``bench_train_step(replay=True)``), each in its own fresh profile right after
the eager row; ``last_loss`` equal in both says the replayed run matched the eager one.
``--no-tfjs`` leaves the tf.js rows out.

Transformer workloads (browser_workloads.py): ``char_tf`` (decoder d128, 2 layers, 4
heads, context 64) and ``tf_d384`` (d384, 6 layers, 6 heads, context 256), batch 32,
vocab 96, cross-entropy, Adam 1e-3; tf.js builds the same decoder from tf ops
(bench/browser/tfjs_transformer.js) and both sides report their parameter count.
``--tiny`` runs every model at its smoke-check size (SwiftShader steps slowly).

    python3 bench/browser_train_step.py [--models seed_lstm,lstm2x64,char_tf] [--replay]
        [--no-tfjs] [--tiny] [--json]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser_workloads import TRANSFORMERS, sized  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "browser"
FLAGS = [
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CONFIGS = {
    "seed_lstm": {"batch": 32, "T": 5, "hidden": 8, "layers": 1, "lr": 0.01},
    "lstm2x64": {"batch": 64, "T": 32, "hidden": 64, "layers": 2, "lr": 1e-3},
}
CONFIGS.update(TRANSFORMERS)


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(QuietHandler, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
    }

    def log_message(self, *a):
        pass


def ensure_tfjs() -> None:
    if not (HERE / "node_modules" / "@tensorflow" / "tfjs").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=HERE, check=True)


def browser(pw, profile: str):
    return pw.chromium.launch_persistent_context(
        profile, executable_path="/usr/bin/chromium", headless=True, args=FLAGS
    )


def tfjs_rows(pw, models, steps, repeats, tiny=False) -> list[dict]:
    ensure_tfjs()
    httpd, url = serve(HERE)
    rows = []
    try:
        for name in models:
            for backend in ("webgpu", "webgl", "wasm"):
                profile = tempfile.mkdtemp(prefix="scellis-bench-")
                ctx = browser(pw, profile)
                try:
                    page = ctx.new_page()
                    page.goto(f"{url}/tfjs.html")
                    try:
                        r = page.evaluate(
                            "([b, c, s, k]) => tfjsBench(b, c, s, k)",
                            [backend, sized(CONFIGS[name], name, tiny)[0], steps, repeats],
                        )
                    except Exception as e:  # a failed backend is a row that says why
                        r = {"error": str(e).splitlines()[0][:300]}
                finally:
                    ctx.close()
                    shutil.rmtree(profile, ignore_errors=True)
                rows.append({"model": name, "impl": f"tfjs-{backend}", **r})
    finally:
        httpd.shutdown()
    return rows


def scellis_rows(pw, models, steps, repeats, replay=False, tiny=False) -> list[dict]:
    """The Scellis side: the built site (``scellis site build``) in a fresh profile; the
    engine's start (Pyodide, wheels, device) is timed from navigation to its ready mark."""
    import time

    site = Path(tempfile.mkdtemp(prefix="scellis-site-"))
    sys.path.insert(0, str(ROOT / "src"))
    from scellis.cli.main import main as scellis_main

    tab_bench = ROOT / "bench" / "tab" / "tabbench"  # bench_train_step, injected into the site
    if scellis_main(["site", "build", "--out", str(site), "--extra-package", str(tab_bench)]):
        raise SystemExit("site build failed")
    httpd, url = serve(site)
    rows = []
    modes = (False, True) if replay else (False,)
    try:
        for name, rep in ((n, m) for n in models for m in modes):
            profile = tempfile.mkdtemp(prefix="scellis-bench-")
            ctx = browser(pw, profile)
            try:
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_function("document.body.dataset.engine", timeout=300_000)
                boot_ms = (time.perf_counter() - t0) * 1e3
                try:
                    r = page.evaluate(
                        "([m, s, k, r, shape]) => window.scellisClient.call('bench_train_step',"
                        " {model: m, steps: s, repeats: k, replay: r, shape})",
                        [name, steps, repeats, rep, sized(CONFIGS[name], name, tiny)[1]],
                    )
                except Exception as e:  # a failed side is a row that says why, not a crash
                    impl = "scellis-webgpu-replay" if rep else "scellis-webgpu"
                    r = {"impl": impl, "error": str(e).splitlines()[-1][:300]}
            finally:
                ctx.close()
                shutil.rmtree(profile, ignore_errors=True)
            r["engine_start_ms"] = boot_ms
            rows.append({"model": name, **r})
    finally:
        httpd.shutdown()
        shutil.rmtree(site, ignore_errors=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="seed_lstm,lstm2x64")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--replay", action="store_true", help="also time the replayed step")
    ap.add_argument("--no-tfjs", action="store_true", help="Scellis rows only")
    ap.add_argument("--tiny", action="store_true", help="every model at its smoke-check size")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    models = a.models.split(",")
    unknown = [m for m in models if m not in CONFIGS]
    if unknown:
        print(
            f"unknown model(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)}", file=sys.stderr
        )
        return 2
    with sync_playwright() as pw:
        rows = scellis_rows(pw, models, a.steps, a.repeats, a.replay, a.tiny)
        if not a.no_tfjs:
            rows += tfjs_rows(pw, models, a.steps, a.repeats, a.tiny)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        if "error" in r:
            print(f"{r['model']:<10} {r['impl']:<21} {r['error']}")
        else:
            start = r.get("engine_start_ms")
            extra = f"  (+ engine start {start:7.0f} ms)" if start is not None else ""
            if "last_loss" in r:
                extra += f"  last loss {r['last_loss']!r}"
            if "params" in r:
                extra += f"  params {r['params']:,}"
            print(
                f"{r['model']:<10} {r['impl']:<21} {r['ms_per_step']:9.2f} ms/step   "
                f"first step {r['first_step_ms']:8.0f} ms{extra}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
