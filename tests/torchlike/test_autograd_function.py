"""torch's ``autograd.Function`` habits against torch CPU: a hand-written backward that
reads saved tensors, a straight-through estimator with a non-tensor argument, gradient
reversal passing its input through, inside a model's training step."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc

pytestmark = pytest.mark.torch


def _functions(lib):
    class Clipped(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return (x * w).clamp(min=0)

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            g = grad * ((x * w) > 0).float()
            return g * w, (g * x).sum(0)

    class RoundThrough(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            return (x * scale).round() / scale

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    class Reverse(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad.neg() * ctx.alpha, None

    return Clipped, RoundThrough, Reverse


def _step(lib, x, w):
    clipped, round_through, reverse = _functions(lib)
    h = clipped.apply(x, w)
    q = round_through.apply(h, 4.0)
    r = reverse.apply(q.tanh(), 0.5)
    loss = (q * q).sum() + (r * x).sum()
    loss.backward()
    return loss


def test_hand_written_backwards_give_torchs_gradients():
    (sx, tx), (sw, tw) = pair(5, 3, seed=1, grad=True), pair(3, seed=2, grad=True)
    close(_step(sc, sx, sw), _step(torch, tx, tw), atol=1e-4)
    close(sx.grad, tx.grad, atol=1e-4)
    close(sw.grad, tw.grad, atol=1e-4)


def test_without_gradients_apply_is_the_plain_forward():
    clipped = _functions(sc)[0]
    x, w = sc.tensor(np.ones((2, 3), np.float32)), sc.tensor(np.full(3, -2.0, np.float32))
    out = clipped.apply(x, w)
    assert not out.requires_grad and out.tolist() == [[0.0] * 3] * 2


def test_a_backward_with_the_wrong_number_of_gradients_is_one_clear_error():
    class Short(sc.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return (grad,)

    x = sc.tensor(np.ones(3, np.float32), requires_grad=True)
    with pytest.raises(sc.ScellisError, match="returned 1 gradients for 2 forward arguments"):
        Short.apply(x, x * 2).sum().backward()
