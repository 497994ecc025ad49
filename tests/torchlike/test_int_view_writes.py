"""In-place writes through views of integer and bool tensors reach the tensor they
were taken from, as torch's do (``M[1].fill_(7)``, ``M[:, 0].zero_()``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc

pytestmark = pytest.mark.torch


def _ints(seed=0):
    a = np.random.default_rng(seed).integers(-(2**30), 2**30, (4, 5)).astype(np.int32)
    return sc.tensor(a), torch.from_numpy(a.copy())


WRITES = {  # name: the same in-place writes through views, in either library
    "row_fill": lambda m: m[1].fill_(7),
    "column_zero": lambda m: m[:, 0].zero_(),
    "transposed_row_add": lambda m: m.t()[2].add_(-(2**29) + 3),
    "strided_slice_mul": lambda m: m[::2, 1::2].mul_(3),
    "narrow_copy": lambda m: m.narrow(1, 2, 2).copy_(m[:, :2].clone()),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_int_view_write_reaches_base(name):
    ours, theirs = _ints(seed=len(name))
    WRITES[name](ours)
    WRITES[name](theirs)
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


def test_bool_view_write_reaches_base_and_other_views():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)) > 0
    ours, theirs = sc.tensor(a), torch.from_numpy(a.copy())
    other_ours, other_theirs = ours[:, 1], theirs[:, 1]  # taken before the write
    for m in (ours, theirs):
        m[2].fill_(True)
        m[:, 3].zero_()
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())
    np.testing.assert_array_equal(np.asarray(other_ours.tolist()), other_theirs.numpy())


def test_int_of_default_integer_tensor_is_a_copy():
    """torch's ``.int()`` of an int64 tensor copies; its ``.long()`` is the tensor itself."""
    ours, theirs = _ints(seed=3)
    ours, theirs = ours.long(), theirs.long()
    for m in (ours, theirs):
        m.int().fill_(5)
        m.long()[0].zero_()
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())
