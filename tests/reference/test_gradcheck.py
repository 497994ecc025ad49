"""Every differentiable case: analytic gradient vs float64 central differences."""

from __future__ import annotations

import pytest
from cases import GRADCHECK_CASES

from helpers import gradcheck


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=lambda c: c.name)
def test_gradcheck(case):
    gradcheck(case)
