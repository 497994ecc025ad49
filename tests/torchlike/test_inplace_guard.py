"""Every in-place entry point passes the one in-place guard (runtime/write_guard.py).

Oracle: torch on the same script. On a leaf that requires grad, with gradients on,
torch refuses each of these writes; ours refuses with the message only the guard
writes. Under ``no_grad`` both write the same values and count the write, so a
backward that saved the written tensor refuses afterwards in both.
"""

from __future__ import annotations

import random
import re

import pytest
import torch
from tlutil import close, pair

import scellis as sc


def _iadd(x, y, mask):
    x += y
    return x


def _isub_step(x, y, mask):  # the hand-written SGD step: p -= lr * p.grad
    x -= 0.1 * y
    return x


def _setitem(x, y, mask):
    x[1] = y[0]
    return x


# (name in our message, the write) for each entry point
WRITES = {
    "+=": _iadd,
    "-=": _isub_step,
    "add_": lambda x, y, mask: x.add_(y),
    "index assignment": _setitem,
    "copy_": lambda x, y, mask: x.copy_(y),
    "zero_": lambda x, y, mask: x.zero_(),
    "masked_fill_": lambda x, y, mask: x.masked_fill_(mask, 0.5),
}


def _operands(seed: int):
    (x, tx), (y, ty) = pair(3, 4, seed=seed, grad=True), pair(3, 4, seed=seed + 1)
    flags = [random.Random(seed).random() < 0.5 for _ in range(12)]
    mask, tmask = sc.tensor(flags).reshape(3, 4), torch.tensor(flags).reshape(3, 4)
    return (x, y, mask), (tx, ty, tmask)


@pytest.mark.parametrize("what", list(WRITES))
def test_a_leaf_that_requires_grad_is_refused_by_the_guard_as_torch_refuses(what):
    write = WRITES[what]
    ours, theirs = _operands(random.randrange(1000))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        write(*theirs)
    message = f"^{re.escape(what)} on a tensor that requires grad: autograd cannot see"
    with pytest.raises(sc.ScellisError, match=message):
        write(*ours)


@pytest.mark.parametrize("what", list(WRITES))
def test_under_no_grad_the_write_is_made_and_counted_as_torchs(what):
    write = WRITES[what]
    (x, y, mask), (tx, ty, tmask) = _operands(random.randrange(1000))
    # a graph that saved x: its backward must refuse once x is written in place
    (x * y).sum().backward()
    loss, tloss = (x * x).sum(), (tx * tx).sum()
    before, tbefore = x._version, tx._version
    with sc.no_grad():
        write(x, y, mask)
    with torch.no_grad():
        write(tx, ty, tmask)
    close(x, tx)
    assert x._version != before and tx._version != tbefore
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tloss.backward()
    with pytest.raises(sc.ScellisError, match="changed by an in-place operation"):
        loss.backward()


def test_the_engines_own_writes_pass_the_guard():
    # an optimizer's fused update writes the parameters through dispatch.apply_inplace
    (w, tw) = pair(5, seed=random.randrange(1000), grad=True)
    for lib, p, optim in ((sc, w, sc.optim.SGD([w], lr=0.1)), (torch, tw, None)):
        optim = optim or torch.optim.SGD([p], lr=0.1)
        (p * p).sum().backward()
        saved = (p * p).sum()  # its backward reads p
        before = p._version
        optim.step()
        assert p._version != before
        error = sc.ScellisError if lib is sc else RuntimeError
        with pytest.raises(error, match="changed by an in-place|modified by an inplace"):
            saved.backward()
    close(w, tw)
