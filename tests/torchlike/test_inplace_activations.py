"""``inplace=True`` on activations and dropout writes into the input as torch does: the
tensor the caller holds changes, the result is that tensor, and gradients flow through
the write; without the flag the input is left alone."""

import numpy as np
import pytest
import torch

import scellis as sc
import scellis.nn as snn
import scellis.nn.functional as SF

FUNCTIONAL = [
    ("relu", {}), ("silu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
    ("celu", {}), ("selu", {}), ("mish", {}), ("hardtanh", {}), ("relu6", {}),
    ("hardsigmoid", {}), ("hardswish", {}), ("threshold", {"threshold": 0.1, "value": -2.0}),
]  # fmt: skip
MODULES = [
    ("ReLU", {}), ("SiLU", {}), ("LeakyReLU", {"negative_slope": 0.3}), ("ELU", {}),
    ("SELU", {}), ("Hardtanh", {}), ("ReLU6", {}), ("Hardswish", {}), ("Mish", {}),
    ("Threshold", {"threshold": 0.1, "value": -2.0}),
]  # fmt: skip


def _pair(seed: int):
    a = np.random.default_rng(seed).standard_normal((3, 5)).astype(np.float32) * 3
    return a, (sc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))


def _run(lib, fn, a_leaf):
    h = a_leaf * 1.5  # an intermediate, as in a model's forward
    returned = fn(h)
    (h * h).sum().backward()  # reads h after the call: the written values
    return h, returned


@pytest.mark.parametrize("name,kw", FUNCTIONAL)
def test_functional_inplace_writes_into_its_input(name, kw):
    a, (s_leaf, t_leaf) = _pair(len(name))
    s_h, s_ret = _run("sc", lambda h: getattr(SF, name)(h, inplace=True, **kw), s_leaf)
    t_h, t_ret = _run(
        "torch", lambda h: getattr(torch.nn.functional, name)(h, inplace=True, **kw), t_leaf
    )
    assert s_ret is s_h
    np.testing.assert_allclose(s_h.detach().numpy(), t_h.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,kw", MODULES)
def test_module_inplace_writes_into_its_input(name, kw):
    a, (s_leaf, t_leaf) = _pair(len(name) + 7)
    s_h, s_ret = _run("sc", getattr(snn, name)(inplace=True, **kw), s_leaf)
    t_h, t_ret = _run("torch", getattr(torch.nn, name)(inplace=True, **kw), t_leaf)
    assert s_ret is s_h
    np.testing.assert_allclose(s_h.detach().numpy(), t_h.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_positional_flag_and_default_leave_the_input_alone():
    a, (s_leaf, _) = _pair(3)
    h = s_leaf * 1.0
    before = h.detach().numpy().copy()
    out = SF.relu(h)
    np.testing.assert_array_equal(h.detach().numpy(), before)  # no flag: untouched
    assert out is not h
    SF.relu(h, True)  # torch's positional inplace
    np.testing.assert_array_equal(h.detach().numpy(), np.maximum(before, 0))


def test_dropout_inplace_in_eval_is_the_input_and_in_training_writes_it():
    a, (s_leaf, _) = _pair(4)
    h = s_leaf * 1.0
    m = snn.Dropout(0.5, inplace=True)
    m.eval()
    assert m(h) is h
    m.train()
    out = m(h)
    assert out is h
    kept = h.detach().numpy() != 0
    assert 0 < kept.mean() < 1  # some zeroed, some kept (15 values at p = 0.5)
    np.testing.assert_allclose(h.detach().numpy()[kept], (a * 1.0)[kept] * 2, rtol=1e-6)


def test_inplace_on_a_leaf_that_requires_grad_is_refused_as_in_torch():
    _, (s_leaf, t_leaf) = _pair(5)
    with pytest.raises(RuntimeError):
        torch.nn.functional.relu(t_leaf, inplace=True)
    with pytest.raises(sc.ScellisError):
        SF.relu(s_leaf, inplace=True)
