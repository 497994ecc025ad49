"""``diagonal`` is a view, as torch's: its values, gradients, and writes into it that
reach the matrix it was taken from."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc


@pytest.mark.parametrize("offset", [0, 2, -1, 5])
@pytest.mark.parametrize("dims", [(0, 1), (2, 3), (1, 3)])
def test_diagonal_values_match_torch(offset, dims):
    a = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    got = sc.tensor(a).diagonal(offset, *dims)
    want = torch.from_numpy(a).diagonal(offset, *dims)
    np.testing.assert_array_equal(np.asarray(got.tolist()).reshape(want.shape), want.numpy())


def test_writes_into_diagonal_reach_the_matrix():
    a = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    ints = np.random.default_rng(2).integers(-50, 50, (5, 5)).astype(np.int32)
    out = []
    for lib in (sc, torch):
        m, k = lib.tensor(a), lib.tensor(ints)
        m.diagonal().fill_(2.5)
        m.diagonal(2).mul_(-3.0)
        m.diagonal(-1).add_(lib.tensor([1.0, 2.0, 3.0]))
        k.diagonal().zero_()
        out.append((np.asarray(m.tolist()), np.asarray(k.tolist())))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6)
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_recorded_write_into_diagonal_of_intermediate_has_torch_gradients():
    a = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
    v = np.random.default_rng(4).standard_normal(4).astype(np.float32)
    grads = []
    for lib in (sc, torch):
        x, w = lib.tensor(a, requires_grad=True), lib.tensor(v, requires_grad=True)
        h = x * 2.0
        h.diagonal().mul_(w)
        (h * h).sum().backward()
        grads.append([np.asarray(x.grad.tolist()), np.asarray(w.grad.tolist())])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_diag_of_a_matrix_is_a_copy_as_in_torch():
    a = np.random.default_rng(5).standard_normal((3, 3)).astype(np.float32)
    out = []
    for lib in (sc, torch):
        m = lib.tensor(a)
        lib.diag(m).fill_(9.0)
        lib.diagonal(m, 1).fill_(4.0)
        out.append(np.asarray(m.tolist()))
    np.testing.assert_array_equal(out[0], out[1])
