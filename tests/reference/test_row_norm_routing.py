"""Which path the norm composites take: the fused row norm over the last axis, the
primitives otherwise (several normalised axes, a weight of another shape or dtype)."""

from __future__ import annotations

import numpy as np

import scellis as sc
from helpers import recorded_ops
from scellis.ops.composites import layer_norm, rms_norm


def _ops(fn, *arrays):
    ts = [sc.tensor(a, requires_grad=True) for a in arrays]
    with recorded_ops() as forward:
        y = fn(*ts)
    with recorded_ops() as backward:
        y.backward(sc.tensor(np.ones(y.shape, np.float32)))
    return forward, backward


def _x(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def test_layer_norm_over_the_last_axis_is_one_primitive_each_way():
    fwd, bwd = _ops(lambda x, w, b: layer_norm(x, 8, w, b), _x(2, 3, 8), _x(8), _x(8))
    assert fwd == {"row_norm"}
    assert bwd == {"row_norm_backward", "sum"}  # the weight's and the bias's column sums


def test_rms_norm_is_one_primitive_each_way():
    fwd, bwd = _ops(lambda x, w: rms_norm(x, w), _x(4, 8), _x(8))
    assert fwd == {"row_norm"}
    assert bwd == {"row_norm_backward", "sum"}


def test_several_normalised_axes_keep_the_composite():
    fwd, _ = _ops(lambda x: layer_norm(x, (3, 8)), _x(2, 3, 8))
    assert "row_norm" not in fwd and "sum" in fwd


def test_a_broadcast_weight_keeps_the_composite():
    fwd, _ = _ops(lambda x, w: rms_norm(x, w), _x(4, 8), _x(1, 8))
    assert "row_norm" not in fwd
