"""Flat parameter buffers: flatten_parameters, Modules, named parameters, dispatch counts."""

import numpy as np
import pytest
import torch

import scellis as sc
from conftest import DEVICES
from scellis.catalog.module import Module
from scellis.catalog.optim import SGD, Adam, flat_view, flatten_parameters
from scellis.devices import get_device


class Tiny(Module):
    def __init__(self, w, b, device):
        super().__init__()
        self.w = sc.tensor(w, device=device, requires_grad=True)
        self.head = Module()
        self.head.b = sc.tensor(b, device=device, requires_grad=True)

    def forward(self, x):
        return (x @ self.w).tanh() + self.head.b


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((4, 3)).astype(np.float32),
        rng.standard_normal(3).astype(np.float32),
        rng.standard_normal((5, 4)).astype(np.float32),
    )


def test_flatten_parameters_returns_views_of_one_buffer():
    a, b = sc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True), sc.tensor([5.0])
    views = flatten_parameters([a, b])
    assert [v.shape for v in views] == [(2, 2), (1,)]
    assert all(v.requires_grad for v in views)
    flat = flat_view(views)
    assert flat.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert a._buf is not flat._buf  # a copy: the originals are untouched


@pytest.mark.parametrize("device", DEVICES)
def test_module_parameters_become_views_and_train_like_torch(device):
    w, b, x = _arrays()
    model = Tiny(w, b, device)
    opt = Adam(model, lr=0.05)
    params = [p for _, p in model.named_parameters()]
    assert [n for n, _ in model.named_parameters()] == ["w", "head.b"]
    assert flat_view(params) is not None and model.w is params[0]
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    topt = torch.optim.Adam([tw, tb], lr=0.05)
    xs, xt = sc.tensor(x, device=device), torch.tensor(x)
    for _ in range(5):
        opt.zero_grad()
        topt.zero_grad()
        (model(xs) ** 2.0).mean().backward()
        ((torch.tanh(xt @ tw) + tb) ** 2).mean().backward()
        opt.step()
        topt.step()
    for p, t in zip((model.w, model.head.b), (tw, tb)):
        torch.testing.assert_close(torch.tensor(np.float32(p.tolist())), t.detach())


def test_named_parameters_are_adopted_in_place():
    """Tensors handed over (not a Module) stay the same objects, now viewing the flat buffer."""
    w, b, _ = _arrays()
    model = Tiny(w, b, "reference")
    before = model.w
    opt = SGD(model.named_parameters(), lr=1.0)
    assert model.w is before and model.w._buf is model.head.b._buf
    model.w.grad = sc.ones(model.w.shape)
    model.head.b.grad = sc.ones(model.head.b.shape)
    opt.step()
    np.testing.assert_allclose(np.float32(model.w.tolist()), w - 1.0)
    assert opt._groups[0].names == ["w", "head.b"]


@pytest.mark.webgpu
def test_one_gather_and_one_update_dispatch_per_step():
    w, b, _ = _arrays()
    ps = [sc.tensor(a, device="webgpu", requires_grad=True) for a in (w, b)]
    opt = Adam(ps, lr=0.1)
    dev = get_device("webgpu")
    for p in ps:
        p.grad = sc.ones(p.shape, device="webgpu")
    opt.step()  # allocates the state and the gradient buffer once
    before = dev.stats["dispatches"]
    opt.step()
    assert dev.stats["dispatches"] - before == 2  # flat_gather + adam_update
    # gradients that already are consecutive views of one buffer skip the gather
    grads = flatten_parameters([sc.ones(p.shape, device="webgpu") for p in ps])
    for p, g in zip(ps, grads):
        p.grad = g
    before = dev.stats["dispatches"]
    opt.step()
    assert dev.stats["dispatches"] - before == 1


@pytest.mark.webgpu
def test_gather_packs_many_gradients_under_the_binding_limit():
    dev = get_device("webgpu")
    limit = dev.limits["max_storage_buffers_per_shader_stage"]
    n = limit + 8  # more gradients than one dispatch can bind
    rng = np.random.default_rng(2)
    w = [rng.standard_normal(3).astype(np.float32) for _ in range(n)]
    g = [rng.standard_normal(3).astype(np.float32) for _ in range(n)]
    ps = [sc.tensor(a, device="webgpu", requires_grad=True) for a in w]
    opt = SGD(ps, lr=0.5)
    for p, a in zip(ps, g):
        p.grad = sc.tensor(a, device="webgpu")
    opt.step()  # the first step also fills the new gradient buffer with zeros
    before = dev.stats["dispatches"]
    opt.step()
    per_dispatch = limit - 2  # the target and meta take one binding each
    assert dev.stats["dispatches"] - before == -(-n // per_dispatch) + 1
    got = np.float32(flat_view(ps).tolist())
    half, gw = np.float32(-0.5), np.concatenate(g)
    np.testing.assert_array_equal(got, (np.concatenate(w) + half * gw) + half * gw)
