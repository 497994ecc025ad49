"""More of torch's Tensor surface against torch: view, split/chunk, new_*, eye, cat/stack
with dim=, as_tensor/from_numpy, and the version check that refuses a backward through
a tensor changed in place after the tape used it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc

RNG = np.random.default_rng(11)
A = RNG.standard_normal((4, 6)).astype(np.float32)


def _both():
    return sc.tensor(A), torch.tensor(A)


def _same(ours, theirs):
    np.testing.assert_array_equal(np.asarray(ours.tolist()), theirs.numpy())


@pytest.mark.parametrize("shape", [(6, 4), (-1,), (2, -1, 3), ((3, 8),)])
def test_view_matches_torch(shape):
    ours, theirs = _both()
    _same(ours.view(*shape), theirs.view(*shape))


def test_view_of_a_transposed_tensor_asks_for_reshape_like_torch():
    ours, theirs = _both()
    with pytest.raises(RuntimeError, match="reshape"):
        theirs.t().view(24)
    with pytest.raises(sc.ScellisError, match="reshape"):
        ours.t().view(24)
    _same(ours.t().reshape(24), theirs.t().reshape(24))


@pytest.mark.parametrize("how", [(4, 1), (2, 0), ([1, 3], 0), ([2, 1, 3], 1)])
def test_split_matches_torch(how):
    ours, theirs = _both()
    got, want = ours.split(*how), theirs.split(*how)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _same(a, b)


@pytest.mark.parametrize("chunks,dim", [(3, 0), (4, 1), (5, 1), (1, 0)])
def test_chunk_matches_torch(chunks, dim):
    ours, theirs = _both()
    got, want = ours.chunk(chunks, dim), theirs.chunk(chunks, dim)
    assert [tuple(g.shape) for g in got] == [tuple(w.shape) for w in want]
    for a, b in zip(got, want):
        _same(a, b)


def test_creation_and_joining_match_torch():
    ours, theirs = _both()
    _same(sc.eye(3), torch.eye(3))
    _same(sc.eye(2, 5), torch.eye(2, 5))
    _same(sc.cat([ours, ours * 2], dim=1), torch.cat([theirs, theirs * 2], dim=1))
    _same(sc.stack([ours, ours + 1], dim=1), torch.stack([theirs, theirs + 1], dim=1))
    _same(sc.where(ours > 0, ours, 0.0), torch.where(theirs > 0, theirs, 0.0))
    _same(ours.new_zeros(2, 3), theirs.new_zeros(2, 3))
    _same(ours.new_ones((3,)), theirs.new_ones((3,)))
    _same(ours.new_full((2, 2), 1.5), theirs.new_full((2, 2), 1.5))
    assert ours.new_full((2,), 3, dtype="i32").dtype == sc.i32
    assert sc.as_tensor(ours) is ours  # torch's no-copy case
    _same(sc.as_tensor([[1.0, 2.0]]), torch.as_tensor([[1.0, 2.0]]))
    arr = RNG.standard_normal(5).astype(np.float32)
    _same(sc.from_numpy(arr), torch.from_numpy(arr))
    assert ours.is_floating_point() and not sc.tensor([1, 2]).is_floating_point()
    assert ours.element_size() == theirs.element_size() == 4


def _modified_after_use(lib, no_grad):
    x = lib.tensor(A)
    w = lib.tensor(A[0], requires_grad=True)
    y = (x * w).sum()  # the product's backward reads x
    with no_grad():
        x.mul_(2.0)
    y.backward()


def test_in_place_on_a_tensor_the_tape_saved_is_refused_like_torch():
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _modified_after_use(torch, torch.no_grad)
    with pytest.raises(sc.ScellisError, match="changed by an in-place operation"):
        _modified_after_use(sc, sc.no_grad)


def test_a_change_through_another_view_of_the_storage_is_refused_like_torch():
    for lib, err in ((torch, RuntimeError), (sc, sc.ScellisError)):
        x = lib.tensor(A)
        flat = x.reshape(24)  # a view: the same storage
        w = lib.tensor(A[0], requires_grad=True)
        y = (x * w).sum()
        with lib.no_grad():
            flat.add_(1.0)
        with pytest.raises(err):
            y.backward()


def test_a_saved_result_changed_in_place_is_refused_like_torch():
    for lib, err in ((torch, RuntimeError), (sc, sc.ScellisError)):
        w = lib.tensor(A[0], requires_grad=True)
        y = w.exp()  # exp's backward reads its result
        with lib.no_grad():
            y.add_(1.0)
        with pytest.raises(err):
            y.sum().backward()


def test_in_place_before_use_or_on_a_clone_is_fine():
    """The check counts changes after the tape used a tensor, nothing else: the same
    gradient as torch."""
    got = []
    for lib in (torch, sc):
        x = lib.tensor(A)
        with lib.no_grad():
            x.mul_(2.0)  # before the forward: fine
        w = lib.tensor(A[0], requires_grad=True)
        y = (x * w).sum()
        x.clone().add_(1.0)  # a clone's change leaves x alone
        y.backward()
        got.append(np.asarray(w.grad.tolist()))
    np.testing.assert_allclose(got[1], got[0], rtol=1e-6)


def test_a_parameter_count_written_for_torch_matches_torch():
    rng = np.random.default_rng(6)
    sizes = [int(v) for v in rng.integers(2, 9, 3)]

    def net(nn):
        return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.GRU(sizes[1], sizes[2]))

    want = sum(p.numel() for p in net(torch.nn).parameters())
    assert sum(p.numel() for p in net(sc.nn).parameters()) == want
    assert sum(p.numel for p in net(sc.nn).parameters()) == want  # the property spelling
