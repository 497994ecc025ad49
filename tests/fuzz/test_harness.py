"""The harness's own bounds hold: another exception, a memory bomb and a slow case fail."""

from __future__ import annotations

import time

import harness
import pytest
from harness import checked

from scellis.base.errors import ScellisError


def test_a_scellis_error_of_one_line_is_a_refusal():
    def refuse():
        raise ScellisError("f: refused")

    assert checked("_self", refuse) is None and checked("_self", lambda: 3) == 3


def test_anything_else_fails_the_case():
    with pytest.raises(ZeroDivisionError):
        checked("_self", lambda: 1 / 0)
    with pytest.raises(AssertionError, match="not one line"):
        checked("_self", lambda: (_ for _ in ()).throw(ScellisError("two\nlines")))
    with pytest.raises(AssertionError, match="allocated"):
        checked("_self", lambda: len(bytearray(harness.MEMORY + (1 << 20))))


def test_a_slow_case_fails(monkeypatch):
    monkeypatch.setattr(harness, "TIME_S", 0.05)
    with pytest.raises(AssertionError, match="took"):
        checked("_self", lambda: time.sleep(0.1))
