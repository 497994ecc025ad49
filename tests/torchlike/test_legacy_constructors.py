"""torch's legacy constructors (``torch.Tensor(2, 3)``, ``torch.Tensor([..])``,
``FloatTensor``/``LongTensor``): the shapes, dtypes and values torch gives."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.base.errors import ScellisError

SIZES = [(), (3,), (2, 3), (2, 0, 4), (1, 2, 1, 3, 1, 2)]


@pytest.mark.parametrize("size", SIZES)
def test_sizes_make_a_float32_tensor_of_that_shape(size):
    ours, theirs = sc.Tensor(*size), torch.Tensor(*size)
    assert ours.shape == tuple(theirs.shape) and ours.dtype.name == "f32"
    assert isinstance(ours, sc.Tensor)
    assert sc.FloatTensor(*size).shape == tuple(torch.FloatTensor(*size).shape)


def test_values_become_float32_as_in_torch():
    rng = np.random.default_rng(0)
    ints = rng.integers(-9, 9, (2, 3)).tolist()
    floats = rng.standard_normal((3, 2))
    for data in (ints, floats, floats.astype(np.float64), (1, 2, 3)):
        ours, theirs = sc.Tensor(data), torch.Tensor(data)
        assert ours.dtype.name == "f32"
        np.testing.assert_array_equal(np.asarray(ours.tolist(), np.float32), theirs.numpy())
    longs = sc.LongTensor(ints)
    np.testing.assert_array_equal(longs.tolist(), torch.LongTensor(ints).numpy())
    assert not longs.dtype.is_float


def test_a_tensor_given_shares_its_storage():
    x = sc.tensor(np.random.default_rng(1).standard_normal(4).astype(np.float32))
    y = sc.Tensor(x)
    with sc.no_grad():
        y.add_(1.0)
    np.testing.assert_array_equal(x.tolist(), y.tolist())


def test_a_bare_number_is_refused_with_what_to_use():
    with pytest.raises(ScellisError, match=r"scellis.tensor\(value\)"):
        sc.Tensor(2.5)
    with pytest.raises(TypeError):
        torch.Tensor(2.5)
