"""No text file the project ships carries a merge's conflict markers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(<{7}|>{7}|={7})( |$)", re.M)
SUFFIXES = {".py", ".md", ".sml", ".js", ".json", ".css", ".html", ".toml", ".sh", ".txt"}


def test_no_conflict_markers():
    found = []
    for top in ("src", "tests", "web/src", "examples", "bench", "scripts"):
        for p in (ROOT / top).rglob("*"):
            if p.suffix in SUFFIXES and p.is_file() and "node_modules" not in p.parts:
                if MARKER.search(p.read_text(errors="replace")):
                    found.append(str(p.relative_to(ROOT)))
    for name in ("README.md", "ARCHITECTURE.md", "pyproject.toml", "Makefile", "web/worker.js"):
        if MARKER.search((ROOT / name).read_text()):
            found.append(name)
    assert found == []
