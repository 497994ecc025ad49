"""Test set-up: the shared helpers importable, and ``src/`` when scellis is not installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))
if importlib.util.find_spec("scellis") is None:
    sys.path.insert(0, str(_HERE.parent / "src"))


def pytest_collection_modifyitems(session, config, items):
    """Browser tests run last: Playwright's sync API keeps an asyncio loop running on the
    main thread while its session-wide browser is open, and every later test that reads a
    tensor synchronously would see that loop."""
    browser = [it for it in items if "tests/browser/" in it.nodeid.replace("\\", "/")]
    if browser:
        rest = [it for it in items if it not in set(browser)]
        items[:] = rest + browser
