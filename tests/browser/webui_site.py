"""A built site, served on localhost, and a Playwright page over Debian's Chromium.

A stand-in for the browser helper's ``conftest.py`` fixtures (the site build, ``scellis
site build``, is theirs and not merged yet): the front end bundled with esbuild, Pyodide's
own files from npm, wheels of scellis (zipped from ``src``), ruamel.yaml and click (from
pip's cache, or PyPI at build time), the examples; served by ``http.server``. The
worker and the page are the real ones; only a missing browser device is bridged (the
Model View needs no GPU).
"""

from __future__ import annotations

import atexit
import functools
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--no-sandbox",
    "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip


def _scellis_wheel(out: Path) -> str:
    name = "scellis-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(out / name, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted((ROOT / "src" / "scellis").rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                z.write(p, p.relative_to(ROOT / "src").as_posix())
    return name


def _dep_wheels(out: Path) -> list[str]:
    cache = Path(tempfile.gettempdir()) / "scellis-test-wheels"
    if not list(cache.glob("ruamel_yaml-*.whl")) or not list(cache.glob("click-*.whl")):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache),
             "ruamel.yaml", "click"],
            check=True,
        )  # fmt: skip
    names = []
    for pattern in ("ruamel_yaml-*.whl", "click-*.whl"):
        whl = sorted(cache.glob(pattern))[-1]
        shutil.copy(whl, out / whl.name)
        names.append(whl.name)
    return names


def _worker(site: Path) -> None:
    text = (WEB / "worker.js").read_text()
    if not (ROOT / "src" / "scellis" / "devices" / "browser.py").exists():
        text = text.replace(
            "from scellis.devices import browser as _browser\nawait _browser.install()\n", ""
        ).replace(
            "const hello = api.hello().toJs({ dict_converter: Object.fromEntries });",
            'const hello = { device: "none (no browser device in this build)" };',
        )
    (site / "worker.js").write_text(text)


@functools.lru_cache(maxsize=1)
def build_site() -> Path:
    site = Path(tempfile.mkdtemp(prefix="scellis-webui-site-"))
    if not (WEB / "node_modules" / ".bin" / "esbuild").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=WEB, check=True)
    subprocess.run(
        [str(WEB / "node_modules" / ".bin" / "esbuild"), "src/main.js", "--bundle",
         "--format=esm", f"--outfile={site / 'app.js'}", "--log-level=warning"],
        cwd=WEB, check=True,
    )  # fmt: skip
    shutil.copy(WEB / "index.html", site / "index.html")
    _worker(site)
    shutil.copytree(WEB / "node_modules" / "pyodide", site / "pyodide")
    wheels = site / "wheels"
    wheels.mkdir()
    names = [_scellis_wheel(wheels), *_dep_wheels(wheels)]
    (wheels / "manifest.json").write_text(json.dumps({"wheels": names}))
    shutil.copytree(ROOT / "examples", site / "examples")
    return site


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
    }  # fmt: skip

    def log_message(self, *args):
        pass


@functools.lru_cache(maxsize=1)
def serve() -> str:
    site = build_site()
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}/"


def open_page(tmp_dir: Path, width: int = 1440, height: int = 900):
    """(playwright, context, page) on the served app, the engine ready."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    ctx = pw.chromium.launch_persistent_context(
        str(tmp_dir / "profile"),
        executable_path=CHROMIUM,
        headless=True,
        args=FLAGS,
        viewport={"width": width, "height": height},
    )
    page = ctx.new_page()
    page.on("console", lambda m: print("[console]", m.type, m.text) if m.type == "error" else None)
    page.goto(serve())
    page.wait_for_function("document.body.dataset.engine === 'ready'", timeout=180_000)
    return pw, ctx, page


@functools.lru_cache(maxsize=1)
def shared_page():
    """One page for every test of this folder: the engine starts once per session."""
    pw, ctx, page = open_page(Path(tempfile.mkdtemp(prefix="scellis-webui-profile-")))

    def close():
        ctx.close()
        pw.stop()

    atexit.register(close)
    return page


def full_screen(page, on: bool) -> None:
    """Open or close Model View's full-screen editor (it covers the other panels)."""
    if ("mv-full" in (page.get_attribute("#model-view", "class") or "")) != on:
        page.click(".mv-expand")


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    return path
