"""Gradient hooks: ``Tensor.register_hook`` on leaves and on results of ops, and
``Module.register_full_backward_hook``, against torch CPU on the same random values."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc
import scellis.nn as snn
from scellis.base.errors import AutogradError, ScellisError


def _run(lib, x, w):
    seen = []
    x.register_hook(lambda g: g * 3)  # a leaf: changes what .grad receives
    h = (x * w).tanh()
    h.register_hook(lambda g: seen.append(g.clone()))  # a result: sees, changes nothing
    y = h * h
    y.register_hook(lambda g: g + 1)  # a result: changes what flows on
    removed = y.register_hook(lambda g: g * 100)
    removed.remove()
    (y * w).sum().backward()
    return seen[0], x.grad


def test_tensor_hooks_see_and_replace_gradients_as_in_torch():
    (xs, xt), (ws, wt) = pair(3, 4, seed=1, grad=True), pair(3, 4, seed=2)
    seen_s, grad_s = _run(sc, xs, ws)
    seen_t, grad_t = _run(torch, xt, wt)
    close(seen_s, seen_t)
    close(grad_s, grad_t)


def test_a_hook_on_a_tensor_without_grad_is_refused():
    xs, _ = pair(3, seed=3)
    with pytest.raises(AutogradError, match="does not require grad"):
        xs.register_hook(lambda g: g)


def _hooked_model(lib, nn, state):
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2))
    model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    calls = []

    def hook(module, grad_input, grad_output):
        calls.append((grad_input[0], grad_output[0]))
        return (grad_input[0] * 0.5,)

    model[2].register_full_backward_hook(hook)
    model[0].register_full_backward_hook(lambda m, gi, go: calls.append((gi[0], go[0])))
    return model, calls


def test_module_full_backward_hook_matches_torch():
    rng = np.random.default_rng(5)
    twin = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    state = {k: v.detach().numpy() for k, v in twin.state_dict().items()}
    x = rng.standard_normal((3, 4)).astype(np.float32)
    ms, calls_s = _hooked_model(sc, snn, state)
    mt, calls_t = _hooked_model(torch, torch.nn, state)
    xs, xt = sc.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    (ms(xs) ** 2).sum().backward()
    (mt(xt) ** 2).sum().backward()
    assert len(calls_s) == len(calls_t) == 2
    for (gi_s, go_s), (gi_t, go_t) in zip(calls_s, calls_t):
        close(go_s, go_t)
        close(gi_s, gi_t)
    close(xs.grad, xt.grad)
    close(ms[0].weight.grad, mt[0].weight.grad)


def test_a_full_backward_hook_on_a_first_layer_gets_no_input_gradient():
    ms = snn.Linear(3, 2)
    got = []
    ms.register_full_backward_hook(lambda m, gi, go: got.append(gi))
    xs, _ = pair(4, 3, seed=6)
    ms(xs).sum().backward()
    assert got == [(None,)]


def test_a_full_backward_hook_on_a_call_of_two_tensors_is_refused():
    mha = snn.MultiheadAttention(4, 2, batch_first=True)
    mha.register_full_backward_hook(lambda m, gi, go: None)
    xs, _ = pair(1, 3, 4, seed=7, grad=True)
    with pytest.raises(ScellisError, match="one tensor argument"):
        mha(xs, xs, xs)


def test_module_full_backward_pre_hook_replaces_the_output_gradient_as_torch():
    twin = torch.nn.Linear(4, 3)
    state = {k: v.detach().numpy() for k, v in twin.state_dict().items()}
    grads = []
    for lib, nn_ in ((sc, snn), (torch, torch.nn)):
        layer = nn_.Linear(4, 3)
        layer.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        seen = []
        layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
        layer.register_full_backward_hook(lambda m, gi, go, seen=seen: seen.append(go[0]))
        x = lib.tensor(np.random.default_rng(8).standard_normal((2, 4)).astype(np.float32))
        x.requires_grad_()
        (layer(x).tanh() ** 2).sum().backward()
        grads.append((x.grad, layer.weight.grad, seen[0]))
    for ours, theirs in zip(*grads):
        close(ours, theirs)
