"""Tape semantics: accumulation, shared sub-graphs, grad modes, detach and backward errors."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.base.errors import AutogradError

RNG = np.random.default_rng(2024)
X0 = RNG.standard_normal((3, 7))


def leaf(a=X0):
    return sc.tensor(a, requires_grad=True)


def grad(t) -> np.ndarray:
    return np.array(t.grad.tolist())


def test_reuse_in_one_op_and_across_ops():
    x = leaf()
    (x * x + x.sin() * x).sum().backward()
    np.testing.assert_allclose(grad(x), 2 * X0 + np.cos(X0) * X0 + np.sin(X0), rtol=1e-12)


def test_backward_twice_accumulates():
    x = leaf()
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_allclose(grad(x), 2 * X0)
    y.backward()
    np.testing.assert_allclose(grad(x), 4 * X0)
    # a freshly built graph adds on top as well
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(grad(x), 4 * X0 + 3)


def test_freed_graph_refuses_a_second_backward():
    x = leaf()
    y = (x.exp() * 2.0).sum()
    y.backward()
    with pytest.raises(AutogradError):
        y.backward()


def test_diamond():
    # x -> a -> (b, c) -> y: a's gradient is the sum over both branches
    x = leaf()
    a = x.exp()
    b, c = a * 2.0, a.sin()
    (b * c).sum().backward()
    ea = np.exp(X0)
    want = (2 * np.sin(ea) + 2 * ea * np.cos(ea)) * ea
    np.testing.assert_allclose(grad(x), want, rtol=1e-12)


def test_deep_shared_chain():
    # every level reuses the previous one twice: 2**depth paths, one gradient
    x = leaf(np.array([0.3, -0.2]))
    y = x
    for _ in range(12):
        y = y * 0.5 + y * 0.5
    y.sum().backward()
    np.testing.assert_allclose(grad(x), [1.0, 1.0], rtol=1e-12)


def test_no_grad_records_nothing():
    x = leaf()
    with sc.no_grad():
        y = x * 2.0 + 1.0
        assert not sc.is_grad_enabled()
        with sc.enable_grad():
            z = x * 2.0
    assert sc.is_grad_enabled()
    assert not y.requires_grad and y._node is None
    assert z.requires_grad and z._node is not None
    with pytest.raises(AutogradError):
        y.sum().backward()


def test_no_grad_decorator_and_reentry():
    x = leaf()
    guard = sc.no_grad()

    @guard
    def depth(n):
        if n:
            depth(n - 1)
        # still inside this call's no_grad after the inner call returned
        assert not sc.is_grad_enabled()
        return x * 2.0

    assert not depth(3).requires_grad
    with guard:
        with guard:
            pass
        assert not sc.is_grad_enabled()
    assert sc.is_grad_enabled()


def test_no_grad_restores_after_an_exception():
    with pytest.raises(ValueError):
        with sc.no_grad():
            raise ValueError("boom")
    assert sc.is_grad_enabled()


def test_detach_cuts_the_graph():
    x = leaf()
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    np.testing.assert_array_equal(np.array(d.tolist()), X0)
    (d * x + x).sum().backward()
    np.testing.assert_allclose(grad(x), X0 + 1)  # d counts as a constant


def test_non_scalar_backward_needs_a_gradient():
    x = leaf()
    y = x * 2.0
    with pytest.raises(AutogradError):
        y.backward()
    with pytest.raises(AutogradError):
        y.backward(sc.tensor(np.ones((7,))))  # a gradient of the wrong shape
    g = RNG.standard_normal((3, 7))
    y.backward(sc.tensor(g))
    np.testing.assert_allclose(grad(x), 2 * g)


def test_backward_casts_the_gradient_to_the_root_dtype():
    x = leaf()
    (x * 2.0).backward(sc.tensor(np.ones((3, 7)), dtype="f32"))
    assert x.grad.dtype == sc.f64


def test_backward_without_grad_errors():
    with pytest.raises(AutogradError):
        sc.tensor([1.0, 2.0]).sum().backward()


def test_only_leaves_and_retained_get_grad():
    x = leaf()
    h = x.tanh()
    h.retain_grad()
    k = h * 3.0
    k.sum().backward()
    assert k.grad is None
    np.testing.assert_allclose(np.array(h.grad.tolist()), np.full((3, 7), 3.0))
    np.testing.assert_allclose(grad(x), 3 * (1 - np.tanh(X0) ** 2), rtol=1e-12)


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(sc.ScellisError):
        sc.tensor([1, 2, 3], requires_grad=True)


def test_inputs_without_requires_grad_get_nothing():
    x, w = leaf(), sc.tensor(RNG.standard_normal((7, 2)))
    (x @ w).sum().backward()
    assert w.grad is None
    np.testing.assert_allclose(grad(x), np.tile(np.array(w.tolist()).sum(1), (3, 1)))
