"""The null device: shapes and dtypes of ops and their gradients, and shape errors, no data."""

from __future__ import annotations

import random

import numpy as np
import pytest

import scellis as sc
from scellis import functional as F
from scellis.base.errors import AutogradError, DeviceError, DTypeError, ShapeError


def z(*shape, dtype="f32", grad=True):
    return sc.zeros(shape, dtype=dtype, device="null", requires_grad=grad)


@pytest.mark.parametrize(
    "fn, shapes, want",
    [
        (lambda a, b: a + b, [(3, 1), (7,)], (3, 7)),
        (lambda a, b: a @ b, [(4, 1, 3, 7), (5, 7, 2)], (4, 5, 3, 2)),
        (lambda a, b: a @ b, [(7,), (2, 7, 3)], (2, 3)),
        (lambda a: a.permute(2, 0, 1)[1:, ::2], [(3, 5, 7)], (6, 2, 5)),
        (lambda a: a.pad([1, 0], [0, 2], [1, 0]), [(3, 7)], (6, 9)),
        (lambda a: a.sum(1, keepdim=True).amax(0), [(3, 7)], (1,)),
        (lambda a: a.var((0, 2)), [(3, 4, 5)], (4,)),
        (lambda a, b: F.concat([a, b], 1), [(3, 1), (3, 7)], (3, 8)),
        (lambda a: F.stack([a, a], -1), [(3, 7)], (3, 7, 2)),
        (lambda a: F.layer_norm(a, 7), [(3, 7)], (3, 7)),
        (lambda a: a.T.reshape(-1), [(3, 7)], (21,)),
    ],
)
def test_shapes_and_gradient_shapes(fn, shapes, want):
    xs = [z(*s) for s in shapes]
    out = fn(*xs)
    assert out.shape == want and out.device.name == "null"
    out.sum().backward()
    for x, s in zip(xs, shapes):
        assert x.grad.shape == s and x.grad.dtype == x.dtype


def test_index_ops_on_null():
    w = z(7, 5)
    idx = sc.tensor([[1, 2], [0, 6]], device="null")
    e = F.embedding(idx, w)
    assert e.shape == (2, 2, 5)
    loss = F.cross_entropy(e.reshape(4, 5), sc.tensor([0, 1, 2, 3], device="null"))
    loss.backward()
    assert loss.shape == () and w.grad.shape == (7, 5)


@pytest.mark.parametrize(
    "fn, err",
    [
        (lambda: z(3, 7) + z(3, 6), ShapeError),
        (lambda: z(3, 7) @ z(6, 2), ShapeError),
        (lambda: z(3, 7).reshape(5, -1), ShapeError),
        (lambda: z(3, 7)[3], ShapeError),
        (lambda: z(3, 7).exp().backward(), AutogradError),
        (lambda: z(3, dtype="i32", grad=False).prim("exp"), DTypeError),
        (lambda: z(3).tolist(), DeviceError),
    ],
)
def test_errors_are_scellis_errors(fn, err):
    with pytest.raises(err):
        fn()


def test_cached_output_shapes_follow_every_input_and_attr():
    """Each op's output geometry is kept per op, input shapes and dtypes and attrs: ops
    of one, two and three inputs, and one op under different attrs, on random shapes,
    asked twice in turn, keep NumPy's shapes."""
    rng = random.Random()
    for _ in range(20):
        shape = tuple(rng.randint(1, 6) for _ in range(3))
        a = sc.zeros(shape, device="null")
        row = sc.zeros(shape[-1:], device="null")
        mask = sc.zeros(shape, dtype="bool", device="null")
        host = np.empty(shape)
        for _ in range(2):
            assert a.exp().shape == shape
            assert (a + row).shape == (host + host[0, 0]).shape
            assert (row + row).shape == shape[-1:]
            assert sc.functional.where(mask, a, row).shape == shape
            for axis in range(3):
                assert a.sum(axis).shape == host.sum(axis).shape
                assert a.sum(axis, keepdim=True).shape == host.sum(axis, keepdims=True).shape
            assert a.cast("i32").dtype == sc.i32 and a.exp().dtype == sc.f32
