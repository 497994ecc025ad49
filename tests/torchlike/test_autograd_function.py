"""torch.autograd.Function subclasses run in both libraries on the same random values:
results and gradients against torch CPU. Tutorial habits (a hand-written backward that
reads saved tensors, a straight-through estimator with a non-tensor argument, gradient
reversal passing its input through), several results, torch's split setup_context
form, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc
from scellis.base.errors import AutogradError

pytestmark = pytest.mark.torch


def _exp_fn(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = x.exp() * scale
            ctx.save_for_backward(y)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y, None

    return Exp


def _split_fn(lib):
    """Two results (a product and a difference) of two inputs, in torch's split form."""

    class Split(lib.autograd.Function):
        @staticmethod
        def forward(a, b):
            return a * b, a - b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, gp, gd):
            a, b = ctx.saved_tensors
            ga = gp * b + gd if ctx.needs_input_grad[0] else None
            gb = gp * a - gd if ctx.needs_input_grad[1] else None
            return ga, gb

    return Split


def test_function_values_and_gradients_match_torch():
    (xs, xt), (ws, wt) = pair(3, 4, seed=1, grad=True), pair(3, 4, seed=2)
    ys, yt = _exp_fn(sc).apply(xs, 0.5), _exp_fn(torch).apply(xt, 0.5)
    close(ys, yt)
    (ys * ws).sum().backward()
    (yt * wt).sum().backward()
    close(xs.grad, xt.grad)


def test_function_with_two_results_and_the_split_form():
    (as_, at), (bs, bt) = pair(2, 5, seed=3, grad=True), pair(2, 5, seed=4, grad=True)
    (ws, wt), (vs, vt) = pair(2, 5, seed=5), pair(2, 5, seed=6)
    ps, ds = _split_fn(sc).apply(as_, bs)
    pt, dt = _split_fn(torch).apply(at, bt)
    close(ps, pt)
    close(ds, dt)
    ((ps * ws).sum() + (ds * vs).sum()).backward()
    ((pt * wt).sum() + (dt * vt).sum()).backward()
    close(as_.grad, at.grad)
    close(bs.grad, bt.grad)


def test_one_result_used_and_input_without_grad():
    (as_, at), (bs, bt) = pair(4, seed=7, grad=True), pair(4, seed=8)
    ps, _ = _split_fn(sc).apply(as_, bs)
    pt, _ = _split_fn(torch).apply(at, bt)
    (ps * ps).sum().backward()
    (pt * pt).sum().backward()
    close(as_.grad, at.grad)
    assert bs.grad is None and bt.grad is None


def test_function_inside_a_chain_and_no_grad():
    (xs, xt) = pair(3, 3, seed=9, grad=True)
    ys = _exp_fn(sc).apply(xs.tanh(), 2.0).sin().sum()
    yt = _exp_fn(torch).apply(xt.tanh(), 2.0).sin().sum()
    ys.backward()
    yt.backward()
    close(xs.grad, xt.grad)
    with sc.no_grad():
        assert not _exp_fn(sc).apply(xs, 1.0).requires_grad


def test_wrong_gradient_count_and_changed_saved_tensor_are_refused():
    class Bad(sc.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,)

    xs, _ = pair(3, seed=10, grad=True)
    ys, _ = pair(3, seed=11)
    with pytest.raises(AutogradError, match="returned 1 gradients"):
        Bad.apply(xs, ys).sum().backward()
    out = _exp_fn(sc).apply(xs * 1.0, 1.0)
    with sc.no_grad():
        out.add_(1.0)
    with pytest.raises(AutogradError, match="in-place"):
        out.sum().backward()


def test_once_differentiable_backward_runs():
    def make(lib, deco):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @deco
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        return Sq

    from torch.autograd.function import once_differentiable as torch_once

    from scellis.autograd.function import once_differentiable

    xs, xt = pair(5, seed=12, grad=True)
    make(sc, once_differentiable).apply(xs).sum().backward()
    make(torch, torch_once).apply(xt).sum().backward()
    close(xs.grad, xt.grad)


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
