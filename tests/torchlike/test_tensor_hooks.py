"""``Tensor.register_hook`` against torch CPU: on an intermediate and on a leaf, a hook
that rescales, one that only reads, hooks in order, ``remove()``, and through
``autograd.grad``."""

from __future__ import annotations

import pytest
import torch
from tlutil import close, pair

import scellis as sc

pytestmark = pytest.mark.torch


def _run(lib, x, w, seen):
    h = x @ w
    h.register_hook(lambda g: g * 3.0)
    h.register_hook(lambda g: seen.append(g.sum().item()))  # reads, returns None
    handle = w.register_hook(lambda g: g.clamp(-0.1, 0.1))
    gone = x.register_hook(lambda g: g * 0.0)
    gone.remove()
    (h.tanh() * h).sum().backward()
    handle.remove()
    (x @ w).sum().backward()  # no hook on w any more: its share adds unclipped


def test_hooks_change_and_read_gradients_as_torchs():
    (sx, tx), (sw, tw) = pair(4, 3, seed=1, grad=True), pair(3, 2, seed=2, grad=True)
    ours, theirs = [], []
    _run(sc, sx, sw, ours)
    _run(torch, tx, tw, theirs)
    close(sx.grad, tx.grad)
    close(sw.grad, tw.grad)
    assert ours == pytest.approx(theirs, rel=1e-5)


def test_autograd_grad_passes_through_hooks_too():
    (sx, tx) = pair(4, 3, seed=3, grad=True)
    got = []
    for lib, x in ((sc, sx), (torch, tx)):
        h = x * 2.0
        h.register_hook(lambda g: g + 1.0)
        got.append(lib.autograd.grad((h * h).sum(), x)[0])
    close(*got)


def test_a_hook_on_a_tensor_without_grad_is_refused():
    with pytest.raises(sc.ScellisError, match="does not require grad"):
        sc.ones(3).register_hook(lambda g: g)
