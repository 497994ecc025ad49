"""The README's Python blocks are examples users copy: each one runs as it is, in order,
from a copy of the repository's examples, in a fresh process."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 4


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "examples", d / "examples")
    return d


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_block_runs(folder, i):
    p = subprocess.run([sys.executable, "-c", BLOCKS[i]], cwd=folder, capture_output=True,
                       text=True, timeout=600)  # fmt: skip
    assert p.returncode == 0, f"README block {i + 1}:\n{BLOCKS[i]}\n{p.stderr[-2000:]}"
