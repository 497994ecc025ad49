"""Browser test harness: the site built once, served on a free port, driven in Chromium.

Debian's Chromium (``/usr/bin/chromium``) runs headless with WebGPU on SwiftShader;
Playwright for Python drives it through ``launch_persistent_context`` with a fresh
profile per context. ``site_url`` builds the site into a session tmp dir (the real
``scellis site build``) and serves it with ``scellis serve``'s server. ``engine_page``
is one page whose engine has started (Pyodide boot is the slow part, so tests share
it); ``open_context`` makes further contexts (offline, close-and-reopen). Screenshots
go to ``tests/artifacts/``.
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--enable-unsafe-webgpu",
    "--use-webgpu-adapter=swiftshader",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
TAB_BENCH = Path(__file__).resolve().parents[2] / "bench" / "tab" / "tabbench"
BOOT_MS = 180_000  # Pyodide + wheels + WebGPU on a loaded 2-core machine


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")
    return sync_playwright


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory):
    from scellis.cli.site_build import build_site

    out = tmp_path_factory.mktemp("site") / "site"
    # the benchmark commands (bench_train_step...) some tests call, beside the shipped wheel
    build_site(out, extra_packages=[TAB_BENCH])
    return out


@pytest.fixture(scope="session")
def site_url(site_dir):
    from scellis.cli.serve import serve_in_thread

    server = serve_in_thread(site_dir)
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def playwright_driver():
    sync_playwright = _playwright()
    with sync_playwright() as p:
        yield p


class Contexts:
    """Persistent Chromium contexts, each on a fresh profile folder unless one is given."""

    def __init__(self, p):
        self.p, self.open, self.dirs = p, [], []

    def new(self, profile: str | None = None, args: list[str] | None = None):
        if profile is None:
            profile = tempfile.mkdtemp(prefix="scellis-chromium-")
            self.dirs.append(profile)
        ctx = self.p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS if args is None else args,
        )
        self.open.append(ctx)
        return ctx, profile

    def close_all(self):
        for ctx in self.open:
            try:
                ctx.close()
            except Exception:  # already closed by the test
                pass
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def contexts(playwright_driver):
    c = Contexts(playwright_driver)
    yield c
    c.close_all()


def watch(page, log: list):
    page.on("console", lambda m: log.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: log.append(f"pageerror: {e}"))


def wait_engine(page, log=None):
    """Wait for the worker's ready (or failed) mark; fail with the page's console."""
    # a window just opened may not have parsed its <body> yet: optional chaining keeps
    # the predicate polling instead of throwing
    try:
        page.wait_for_function("document.body?.dataset.engine", timeout=BOOT_MS)
    except Exception:
        pytest.fail("the engine did not start:\n" + "\n".join((log or [])[-30:]))
    state = page.evaluate("document.body.dataset.engine")
    if state != "ready":
        banner = page.inner_text("#banner")
        pytest.fail(f"the engine failed to start: {banner}\n" + "\n".join((log or [])[-30:]))


def open_engine_page(contexts, site_url, profile=None, viewport=None):
    """A new context (on ``profile``, else a fresh one) with one page on the site whose
    engine has started; its console lines in ``page.console_log``. (ctx, profile, page)."""
    ctx, profile = contexts.new(profile)
    page = ctx.new_page()
    if viewport is not None:
        page.set_viewport_size(viewport)
    log: list[str] = []
    watch(page, log)
    page.goto(site_url)
    wait_engine(page, log)
    page.console_log = log
    return ctx, profile, page


@pytest.fixture(scope="session")
def engine_page(contexts, site_url):
    return open_engine_page(contexts, site_url)[2]


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True, timeout=60_000)
    return path


def screenshots_at(page, name: str, widths=(1440, 412), height: int = 900) -> None:
    """``name_<width>.png`` at each window width, then back to the first width."""
    for width in widths:
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(300)  # let the layout settle at the new width
        screenshot(page, f"{name}_{width}")
    page.set_viewport_size({"width": widths[0], "height": height})


def start_training(page, options: dict, example: str | None = None) -> None:
    """Make ``example`` the page's record and start ``train`` with ``options`` (no wait)."""
    if example is not None:
        # the example's own text, whatever earlier tests left in the shared page
        page.evaluate(
            "async (name) => { const t = await (await fetch(`examples/${name}.sml`)).text();"
            " const app = window.scellisApp; app.record = t; app.recordName = name;"
            " app.emit('record', t); }",
            example,
        )
    page.evaluate(
        "(opts) => { window._run = null; window.scellisApp.run.train(opts).then("
        "r => { window._run = {ok: r}; }, e => { window._run = {err: e.message}; }); }",
        options,
    )


def train_beside_native(page, native, *args, timeout_ms: int):
    """Let the tab's run (started by ``start_training``) train while
    ``native(*args)`` runs in a thread (Playwright's sync API owns this thread's event
    loop); wait for the tab's run, then return what ``native`` returned."""
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(native, *args)
        finish_training(page, timeout_ms=timeout_ms)
        return job.result()


def finish_training(page, timeout_ms: int) -> dict:
    page.wait_for_function("window._run !== null", timeout=timeout_ms, polling=1000)
    out = page.evaluate("window._run")
    if "err" in out:
        pytest.fail(f"training failed in the tab: {out['err']}")
    return out["ok"]
