"""In-place ops on an intermediate that requires grad, against torch CPU.

The op's own backward reads the value it was applied to (``y.relu_()``, ``y.mul_(w)``
on a tensor that does not need a gradient itself), and the gradients are torch's; a
node recorded before the write that reads the old value still refuses in backward, as
torch's version counter makes it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc

pytestmark = pytest.mark.torch

WRITES = {
    "relu_": lambda y, w: y.relu_(),
    "sigmoid_": lambda y, w: y.sigmoid_(),
    "tanh_": lambda y, w: y.tanh_(),
    "sin_": lambda y, w: y.sin_(),
    "clamp_": lambda y, w: y.clamp_(-0.5, 0.7),
    "mul_": lambda y, w: y.mul_(w),
    "div_": lambda y, w: y.div_(w.abs() + 1),
    "pow_": lambda y, w: y.pow_(2),
    "relu_after_iadd": lambda y, w: (y.__iadd__(w), y.relu_())[1],
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_an_in_place_result_has_torchs_gradients(name):
    got = []
    for lib in (sc, torch):
        x, w = (pair(3, 4, seed=s, grad=True)[lib is torch] for s in (1, 2))
        y = x * 1.5
        out = WRITES[name](y, w)
        (out * out + y).sum().backward()
        got.append((x.grad, w.grad, y))
    (sg, swg, sy), (tg, twg, ty) = got
    close(sy, ty)
    close(sg, tg)
    assert (swg is None) == (twg is None)
    if twg is not None:
        close(swg, twg)


def test_an_in_place_write_into_a_tensor_without_grad_takes_its_gradient():
    got = []
    for lib in (sc, torch):
        w = pair(5, seed=4, grad=True)[lib is torch]
        acc = lib.ones(5) * 2.0
        acc.mul_(w).add_(w.exp())  # acc needs no gradient; its new value does
        (acc * acc).sum().backward()
        got.append(w.grad)
    close(*got)


def test_a_reader_recorded_before_the_write_still_refuses():
    for lib, error in ((sc, sc.ScellisError), (torch, RuntimeError)):
        x = lib.tensor(np.array([0.5, -1.0, 2.0], np.float32), requires_grad=True)
        y = x * 1.0
        z = y.sin()  # reads y as it is now
        y.mul_(3.0)
        with pytest.raises(error, match="changed by an in-place|modified by an inplace"):
            (z + y).sum().backward()


VIEW_WRITES = {
    "column_mul_": lambda m, x: x[:, 1].mul_(2.0),
    "column_item_set": lambda m, x: x[:, 2].__setitem__(0, -5.0),
    "transposed_add_": lambda m, x: x.t().add_(1.0),
    "data_column_zero_": lambda m, x: x.data[:, 3].zero_(),
    "narrow_copy_": lambda m, x: x.narrow(1, 1, 2).copy_(m.ones(3, 2)),
    "chunk_mul_": lambda m, x: x.chunk(2, dim=1)[1].mul_(-1.0),
    "every_other_fill_": lambda m, x: x[:, ::2].fill_(0.5),
    "strided_masked_fill_": lambda m, x: x[1:, 1:3].masked_fill_(x[1:, 1:3] > 0, 9.0),
}


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
def test_a_write_through_a_strided_view_reaches_its_tensor(name):
    got = []
    for lib in (sc, torch):
        x = pair(3, 4, seed=5)[lib is torch]
        VIEW_WRITES[name](lib, x)
        got.append(x)
    close(*got)


TRACKED_VIEW_WRITES = {
    "column_mul_": lambda h, w: h[:, 1].mul_(w[:, 0]),
    "row_add_": lambda h, w: h[2].add_(w[1]),
    "transposed_row_sub_": lambda h, w: h.t()[3].sub_(1.0),
    "narrowed_relu_": lambda h, w: h.narrow(1, 1, 2).relu_(),
    "augmented_column": lambda h, w: h[:, 0].__imul__(2.0),
    "row_of_a_row": lambda h, w: h[1][1:3].mul_(w[0, 1:3]),
}


@pytest.mark.parametrize("name", sorted(TRACKED_VIEW_WRITES))
def test_a_recorded_write_through_a_view_reaches_its_tensor_and_gradients(name):
    got = []
    for lib in (sc, torch):
        x, w = (pair(3, 4, seed=s, grad=True)[lib is torch] for s in (3, 4))
        h = x * 1.5
        TRACKED_VIEW_WRITES[name](h, w)
        (h * h).sum().backward()
        got.append((h, x.grad, w.grad))
    (sh, sg, swg), (th, tg, twg) = got
    close(sh, th)
    close(sg, tg)
    assert (swg is None) == (twg is None)
    if twg is not None:
        close(swg, twg)
