"""Golden-file tests of every IR rung on the example models (regenerate: update.py)."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_cases import CASES, path_of, render  # noqa: E402


@pytest.mark.parametrize("model,rung,mode", CASES, ids=["-".join(c) for c in CASES])
def test_rung_matches_golden(model, rung, mode):
    out = render(model, rung, mode)
    assert out.problems == []
    want = path_of(model, rung, mode).read_text(encoding="utf-8")
    if out.text != want:
        diff = "".join(
            difflib.unified_diff(
                want.splitlines(True), out.text.splitlines(True), "golden", "now", n=1
            )
        )
        pytest.fail(f"{model} {rung} {mode} differs from its golden file:\n{diff[:4000]}")


def test_goldens_are_deterministic():
    # two renders in one process: serials, keys and ordering do not drift
    a = render("char_transformer", "kernels", "inference").text
    b = render("char_transformer", "kernels", "inference").text
    assert a == b
