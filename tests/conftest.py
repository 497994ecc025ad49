"""Test set-up: the shared helpers importable, and ``src/`` when scellis is not installed."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))
if importlib.util.find_spec("scellis") is None:
    sys.path.insert(0, str(_HERE.parent / "src"))
# the tab's benchmark commands (tabbench), kept out of the shipped package
if str(_HERE.parent / "bench" / "tab") not in sys.path:
    sys.path.append(str(_HERE.parent / "bench" / "tab"))


@pytest.fixture(scope="session")
def gpu():
    """The native WebGPU device (lavapipe on a machine without a GPU). Without an adapter
    the test is skipped, which fails a strict run: set-up installs lavapipe."""
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    from scellis.base.errors import DeviceError  # noqa: PLC0415
    from scellis.devices import get_device  # noqa: PLC0415

    try:
        return get_device("webgpu")
    except DeviceError as e:
        pytest.skip(f"no WebGPU adapter: {e}")


def pytest_collection_modifyitems(session, config, items):
    """Browser tests run last: Playwright's sync API keeps an asyncio loop running on the
    main thread while its session-wide browser is open, and every later test that reads a
    tensor synchronously would see that loop."""
    browser = [it for it in items if "tests/browser/" in it.nodeid.replace("\\", "/")]
    if browser:
        rest = [it for it in items if it not in set(browser)]
        items[:] = rest + browser


def pytest_sessionfinish(session, exitstatus):
    """Under ``make test`` (SCELLIS_STRICT=1) any skip fails the run: set-up installs every
    oracle the suite uses (wgpu + lavapipe, Chromium, Playwright, torch, onnxruntime), so
    a check that did not run must never be counted with the ones that passed."""
    if not os.environ.get("SCELLIS_STRICT"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and session.exitstatus == 0:
        for rep in skipped:
            where = getattr(rep, "nodeid", "?")
            why = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else rep.longrepr
            reporter.write_line(f"STRICT: skipped, which fails this run: {where}: {why}")
        session.exitstatus = 1
