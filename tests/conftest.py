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
