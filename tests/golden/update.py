"""Rewrite the golden IR files: ``PYTHONPATH=src python3 tests/golden/update.py``.

Run it only when a change to the ladder's output is intended, and read the diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_cases import CASES, HERE, path_of, render  # noqa: E402


def main() -> int:
    HERE.mkdir(exist_ok=True)
    for model, rung, mode in CASES:
        out = render(model, rung, mode)
        if out.problems:
            print(f"{model} {rung} {mode}: verification failed: {out.problems}")
            return 1
        path_of(model, rung, mode).write_text(out.text, encoding="utf-8")
        print(f"wrote {path_of(model, rung, mode).name} ({len(out.text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
