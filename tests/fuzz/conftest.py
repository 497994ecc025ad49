"""The fuzz harness reports how many cases each target tried, and how long they took."""

from __future__ import annotations

import sys
from pathlib import Path

from harness import CASES, REFUSED, SECONDS

# the builders of valid files the codec tests use (ptfiles, onnx_models, tfjsmodels,
# folders)
for _dir in ("codecs", "tfjs", "security"):
    _path = str(Path(__file__).resolve().parents[1] / _dir)
    if _path not in sys.path:
        sys.path.append(_path)


def pytest_terminal_summary(terminalreporter):
    targets = sorted(t for t in CASES if not t.startswith("_"))  # _self: the harness's tests
    if not targets:
        return
    terminalreporter.section("fuzz cases")
    for target in targets:
        n, refused = CASES[target], REFUSED[target]
        terminalreporter.write_line(
            f"{target:12} {n:5} cases ({n - refused} read, {refused} refused)  "
            f"{SECONDS[target]:5.1f} s in the readers"
        )
    terminalreporter.write_line(f"{'total':12} {sum(CASES[t] for t in targets):5} cases")
