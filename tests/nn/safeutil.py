"""Running a snippet in a fresh interpreter with NumPy, wgpu and torch blocked."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import scellis

SRC = str(Path(scellis.__file__).resolve().parent.parent)

BLOCK = """
import sys
for name in ("numpy", "wgpu", "torch"):
    sys.modules[name] = None  # any import of them now raises ImportError
"""


def run_python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
