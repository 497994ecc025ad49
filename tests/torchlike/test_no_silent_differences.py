"""Habits of torch scripts that must do what they do in torch, or refuse aloud."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc

pytestmark = pytest.mark.torch


def test_in_place_operators_change_the_tensor_itself():
    (sw, tw), (sx, tx) = pair(3, 2, grad=True), pair(4, 3, seed=1)
    held = sw  # an optimizer's reference to the parameter
    for _ in range(3):
        for w, x in ((sw, sx), (tw, tx)):
            (x @ w).square().mean().backward()
        with sc.no_grad():
            sw -= 0.1 * sw.grad
            sw *= 0.9
            sw += 0.01
            sw /= 1.1
        with torch.no_grad():
            tw -= 0.1 * tw.grad
            tw *= 0.9
            tw += 0.01
            tw /= 1.1
        sw.grad, tw.grad = None, None
    assert held is sw and sw.is_leaf and sw.requires_grad
    close(sw, tw)


def test_in_place_on_a_leaf_that_needs_grad_is_refused_and_on_an_intermediate_recorded():
    sw, tw = pair(2, 3, grad=True)
    with pytest.raises(sc.ScellisError, match="requires grad"):
        sw += 1.0
    sh, th = sw * 2.0, tw * 2.0
    sh += sw.exp()
    th += tw.exp()
    sh[0] = 0.0  # an index write on an intermediate is recorded too
    th[0] = 0.0
    sh.sum().backward()
    th.sum().backward()
    close(sw.grad, tw.grad)


def test_a_plain_tensor_plus_a_tracked_one_in_place_keeps_the_gradient():
    sw, tw = pair(3, grad=True)
    sa, ta = sc.zeros(3), torch.zeros(3)
    sa += sw * sw
    ta += tw * tw
    sa.sum().backward()
    ta.sum().backward()
    close(sw.grad, tw.grad)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_over_a_dim_give_the_named_pair(name):
    sx, tx = pair(4, 5, grad=True)
    values, indices = getattr(sx, name)(dim=1)
    tv, ti = getattr(tx, name)(dim=1)
    close(values, tv)
    assert indices.tolist() == ti.tolist()
    out = getattr(sx, name)(1, keepdim=True)
    assert (
        out.values.shape == (4, 1)
        and out.indices.tolist() == getattr(tx, name)(1, True).indices.tolist()
    )
    close(getattr(sx, name)(), getattr(tx, name)())
    out.values.sum().backward()
    getattr(tx, name)(1, keepdim=True).values.sum().backward()
    close(sx.grad, tx.grad)
    close(getattr(sc, name)(sx, 0).values, getattr(torch, name)(tx, 0).values)


def test_sort_topk_kthvalue_give_pairs_with_gradients():
    sx, tx = pair(3, 6, grad=True)
    for ours, theirs in (
        (sx.sort(dim=1), tx.sort(dim=1)),
        (sx.sort(0, descending=True), tx.sort(0, descending=True)),
        (sx.topk(2), tx.topk(2)),
        (sx.topk(3, dim=0, largest=False), tx.topk(3, dim=0, largest=False)),
        (sx.kthvalue(2, 1), tx.kthvalue(2, 1)),
    ):
        v, i = ours
        close(v, theirs.values)
        assert i.tolist() == theirs.indices.tolist()
    (sx.topk(2).values * sx.sort(1).values[:, :2]).sum().backward()
    (tx.topk(2).values * tx.sort(1).values[:, :2]).sum().backward()
    close(sx.grad, tx.grad)
    assert sx.argsort(1).tolist() == tx.argsort(1).tolist()


def test_two_schedulers_on_one_optimizer_compose():
    sp, tp = pair(2, grad=True)
    sopt, topt = sc.optim.SGD([sp], lr=1.0), torch.optim.SGD([tp], lr=1.0)
    s1, s2 = (
        sc.optim.lr_scheduler.ExponentialLR(sopt, 0.9),
        sc.optim.lr_scheduler.StepLR(sopt, 2, 0.5),
    )
    t1, t2 = (
        torch.optim.lr_scheduler.ExponentialLR(topt, 0.9),
        torch.optim.lr_scheduler.StepLR(topt, 2, 0.5),
    )
    got, want = [], []
    for _ in range(6):
        sopt.step(), topt.step()
        s1.step(), s2.step(), t1.step(), t2.step()
        got.append(sopt.param_groups[0]["lr"])
        want.append(topt.param_groups[0]["lr"])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_gather_takes_torchs_argument_order():
    sx, tx = pair(3, 4, grad=True)
    idx = [[0, 3], [2, 2], [1, 0]]
    close(sx.gather(1, sc.tensor(idx)), tx.gather(1, torch.tensor(idx)))
    close(sc.gather(sx, 1, sc.tensor(idx)), torch.gather(tx, 1, torch.tensor(idx)))
    sx.gather(dim=0, index=sc.tensor([[2, 0, 1, 1]])).sum().backward()
    tx.gather(dim=0, index=torch.tensor([[2, 0, 1, 1]])).sum().backward()
    close(sx.grad, tx.grad)


def test_deepcopy_of_a_model_is_independent():
    m = sc.nn.Sequential(sc.nn.Linear(3, 4), sc.nn.ReLU(), sc.nn.Linear(4, 2))
    twin = copy.deepcopy(m)
    x = sc.randn(5, 3)
    close(twin(x), torch.tensor(m(x).tolist()))
    with sc.no_grad():
        twin[0].weight.fill_(0.0)
    assert m[0].weight.abs().sum().item() > 0
    assert twin[0].weight.requires_grad


def test_cpu_is_a_device_everywhere_and_compares_like_torchs():
    x = sc.tensor([1.0, 2.0], device="cpu")
    assert str(x.device) == str(torch.tensor([1.0]).device) == "cpu"
    assert x.device == sc.device("cpu") and x.device.type == "cpu"
    assert sc.device("cpu") != sc.device("webgpu") and str(sc.device("cpu")) == "cpu"
    assert sc.zeros(2, device=sc.device("cpu")).device == x.device
    assert sc.randn(2, device="cpu").to("cpu").device == x.device
    m = sc.nn.Linear(2, 2).to(sc.device("cpu"))
    assert m(x).device == x.device
