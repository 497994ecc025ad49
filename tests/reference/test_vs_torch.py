"""Every case against PyTorch on the CPU in float32: forward, and backward where it has one."""

from __future__ import annotations

import pytest
from cases import ALL_CASES

from helpers import torch_check

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_against_torch(case):
    torch_check(case)
