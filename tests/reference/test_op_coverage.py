"""Op-table coverage: every op has its rules, and the case table exercises every op.

Which ops a case exercises is measured, not declared: the reference device's ``run`` is
spied on while the case's forward runs, and the tape it leaves names the view ops.
"""

from __future__ import annotations

import pytest
from cases import ALL_CASES, GRADCHECK_CASES, NOT_IN_TABLE

from helpers import forward_ops
from scellis.autograd import VJP
from scellis.autograd.rules import SAVES_OUTPUT
from scellis.devices.reference.backend import KERNELS  # the table run() dispatches from
from scellis.ops import OPS

DIFFERENTIABLE = {n for n, op in OPS.items() if op.diff_inputs}
# in-place ops (optimizer updates through dispatch.apply_inplace) overwrite their targets:
# no value-returning forward for this table to compare, no gradient; the optimizer tests
# check them against torch.optim. The rule is by tag, so each one must be inert here.
INPLACE = {n for n, op in OPS.items() if "inplace" in op.tags}


@pytest.fixture(scope="module")
def exercised():
    return {c.name: forward_ops(c) for c in ALL_CASES}


def test_every_differentiable_op_has_a_vjp():
    assert sorted(DIFFERENTIABLE - set(VJP)) == []


def test_no_rule_without_an_op():
    assert sorted(set(VJP) - set(OPS)) == []
    assert sorted(set(KERNELS) - set(OPS)) == []
    assert sorted(SAVES_OUTPUT - DIFFERENTIABLE) == []


def test_non_differentiable_ops_have_no_vjp():
    assert sorted(set(VJP) - DIFFERENTIABLE) == []


def test_every_non_view_op_has_a_reference_kernel():
    non_view = {n for n, op in OPS.items() if not op.is_view}
    assert sorted(non_view - set(KERNELS)) == []
    assert sorted(n for n, op in OPS.items() if op.is_view and n in KERNELS) == []


def test_gradcheck_table_covers_every_differentiable_op(exercised):
    seen = set().union(*(exercised[c.name] for c in GRADCHECK_CASES))
    assert sorted(DIFFERENTIABLE - seen) == []


def test_torch_table_covers_every_op(exercised):
    seen = set().union(*exercised.values())
    assert sorted(set(OPS) - seen - set(NOT_IN_TABLE) - INPLACE) == []


def test_inplace_ops_are_outside_autograd():
    for name in INPLACE:
        assert not OPS[name].diff_inputs and name not in VJP, name


def test_ops_left_out_of_the_table_are_justified():
    for name, why in NOT_IN_TABLE.items():
        assert name in OPS, name
        assert not OPS[name].diff_inputs, f"{name} is differentiable; it needs a table row"
        assert why.strip()


def test_spy_sees_what_a_case_runs(exercised):
    # the measurement itself: a matmul row runs matmul, a slice row leaves a slice node
    assert "matmul" in exercised["matmul(3, 7)(7, 5)"]
    assert "slice" in exercised["slice_steps"]
    assert "scatter_add" not in exercised["gather0"]  # forward only: no backward ops
