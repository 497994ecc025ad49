"""Tensor conveniences torch users expect, and creation with torch's signatures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc


def test_numpy_clone_t_and_iteration():
    x = sc.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    a = x.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == (2, 3)
    a[0, 0] = 99.0  # a copy: the tensor keeps its values
    assert x.tolist()[0][0] == 1.0
    assert sc.tensor([1, 2], dtype="i32").numpy().dtype == np.int32
    assert x.t().tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert [r.tolist() for r in x] == x.tolist() and len(x) == 2
    w = sc.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(sc.ScellisError, match="detach"):
        w.numpy()
    (w.clone() * 3.0).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_moves_between_devices_and_dtypes():
    x = sc.tensor([[1.0, 2.0]])
    assert x.to("cpu") is x and x.cpu() is x
    y = x.to("reference", "f64")
    assert y.dtype == sc.f64 and y.tolist() == [[1.0, 2.0]]
    assert x.to(dtype=sc.f16).dtype == sc.f16 and x.to("f64").dtype == sc.f64
    assert x.to(y).dtype == sc.f64
    assert x.to(copy=True) is not x
    null = x.to("null")
    assert null.device.name == "null" and null.shape == (1, 2)


def test_in_place_updates_refuse_tracked_tensors():
    p = sc.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with pytest.raises(sc.ScellisError, match="no_grad"):
        p.add_(1.0)
    with sc.no_grad():
        p.add_(1.0).mul_(2.0).sub_(sc.tensor([1.0, 1.0, 1.0]), alpha=2.0)
        assert p.tolist() == [2.0, -4.0, 6.0]
        p.clamp_(-1.0, 5.0).div_(2.0)
        assert p.tolist() == [1.0, -0.5, 2.5]
        p.copy_(sc.tensor([7.0]))  # broadcast, as torch's copy_
        assert p.tolist() == [7.0, 7.0, 7.0]
        p.zero_()
    assert p.tolist() == [0.0, 0.0, 0.0] and p.requires_grad
    i = sc.tensor([1, 2, 3])
    i.add_(1).fill_(5)
    assert i.tolist() == [5, 5, 5] and i.dtype == sc.i32


def test_in_place_on_a_row_writes_the_parent():
    x = sc.zeros(3, 2)
    x[1].fill_(4.0)
    assert x.tolist() == [[0.0, 0.0], [4.0, 4.0], [0.0, 0.0]]


def test_creation_takes_torchs_signatures():
    assert sc.zeros(2, 3).shape == sc.zeros((2, 3)).shape == (2, 3)
    assert sc.ones(4, dtype="f64").dtype == sc.f64
    assert sc.empty(2).tolist() == [0.0, 0.0]
    assert sc.full((2,), 1.5).tolist() == [1.5, 1.5]
    for args in [(5,), (0, 5), (1, 10, 3), (0.0, 1.0, 0.25), (5, 0, -2)]:
        ours, theirs = sc.arange(*args), torch.arange(*args)
        assert ours.tolist() == pytest.approx(theirs.tolist())
        assert ours.dtype == (sc.f32 if theirs.dtype.is_floating_point else sc.i32)
    np.testing.assert_allclose(
        sc.linspace(-1, 1, 7).numpy(), torch.linspace(-1, 1, 7).numpy(), atol=1e-7
    )
    g1, g2 = sc.rng.Generator(5, "data"), sc.rng.Generator(5, "data")
    a, b = sc.randn(2, 3, generator=g1), sc.randn((2, 3), generator=g2)
    assert a.shape == (2, 3) and a.tolist() == b.tolist()
    assert sc.randn(2, 3, generator=g1).tolist() != a.tolist()  # the stream moved on
    r = sc.randint(3, 7, (200,), generator=g1).tolist()
    assert min(r) >= 3 and max(r) <= 6 and len(set(r)) == 4
    z = sc.zeros(2, requires_grad=True)
    assert z.requires_grad and sc.ones_like(z).tolist() == [1.0, 1.0]
    assert sc.rand_like(z).shape == (2,)


def test_dim_keyword_and_dtype_shorthands_match_torch():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7.0
    x, t = sc.tensor(a), torch.tensor(a)
    pairs = [
        (x.sum(dim=1), t.sum(dim=1)),
        (x.mean(dim=-1, keepdim=True), t.mean(dim=-1, keepdim=True)),
        (x.amax(dim=0), t.amax(dim=0)),
        (x.var(dim=2, unbiased=False), t.var(dim=2, unbiased=False)),
        (x.std(dim=1), t.std(dim=1)),
        (x.softmax(dim=1), t.softmax(dim=1)),
        (x.log_softmax(dim=0), t.log_softmax(dim=0)),
        (x.logsumexp(dim=2), t.logsumexp(dim=2)),
        (x.unsqueeze(dim=1), t.unsqueeze(dim=1)),
        (x.flatten(start_dim=1), t.flatten(start_dim=1)),
        (x.max(dim=2).values, t.max(dim=2).values),
        (x.sum(axis=1), t.sum(1)),  # the engine's spelling still works
    ]
    for ours, theirs in pairs:
        torch.testing.assert_close(torch.tensor(ours.tolist()), theirs)
    assert x.argmax(dim=2).tolist() == t.argmax(dim=2).tolist()
    assert x.dim() == 3 and x.double().dtype == sc.f64 and x.long().dtype == sc.i32
    with pytest.raises(sc.ScellisError, match="dim or axis"):
        x.sum(dim=0, axis=0)
