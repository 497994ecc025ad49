"""Integer division follows torch on both devices: ``/`` is true division (f32 result),
``//`` floors (rounds towards minus infinity), as the ``div`` primitive does on integers.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.runtime.tensor_math import TensorMath  # the engine's div primitive

pytestmark = pytest.mark.torch
DEVICES = ["reference", pytest.param("webgpu", marks=pytest.mark.webgpu)]

rng = np.random.default_rng(3)
A = rng.integers(-20, 21, (4, 7)).astype(np.int32)
B = rng.choice([-7, -3, -2, -1, 1, 2, 5], (7,)).astype(np.int32)  # no zero divisors


def _t(a, device):
    return sc.tensor(a, device=device)


def _torch(a):
    return torch.from_numpy(a.astype(np.int64))


@pytest.mark.parametrize("device", DEVICES)
def test_int_truediv_is_true_division_in_f32(device):
    a, b = _t(A, device), _t(B, device)
    for got, want in [
        (a / b, _torch(A) / _torch(B)),
        (a / 3, _torch(A) / 3),
        (7 / b, 7 / _torch(B)),
        ((a > 0) / (b != 0), (_torch(A) > 0) / (_torch(B) != 0)),  # bool / bool too
    ]:
        assert got.dtype == sc.f32 and want.dtype == torch.float32
        torch.testing.assert_close(torch.tensor(got.tolist()), want)


@pytest.mark.parametrize("device", DEVICES)
def test_int_floordiv_floors_like_torch(device):
    a, b = _t(A, device), _t(B, device)
    for got, want in [
        (a // b, _torch(A) // _torch(B)),
        (a // 3, _torch(A) // 3),
        (-7 // b, -7 // _torch(B)),
        (TensorMath.div(a, b), _torch(A) // _torch(B)),  # the primitive floors integers
        (a.div(b, rounding_mode="floor"), _torch(A) // _torch(B)),
    ]:
        assert got.dtype == sc.i32
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_float_division_unchanged_and_float_floordiv_floors(device):
    x = sc.tensor(np.array([1.5, -3.0, 7.0], np.float32), device=device)
    y = sc.tensor(np.array([2.0, 4.0, -0.5], np.float32), device=device)
    assert (x / y).tolist() == [0.75, -0.75, -14.0]
    assert (x / 2).tolist() == [0.75, -1.5, 3.5]
    assert (_t(np.array([3], np.int32), device) / 2.0).tolist() == [1.5]
    assert (x // y).tolist() == (torch.tensor(x.tolist()) // torch.tensor(y.tolist())).tolist()


def test_int_truediv_has_a_float_gradient_path():
    w = sc.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    scale = sc.tensor(np.array([3, 4], np.int32)) / 2  # f32 [1.5, 2.0]
    (w * scale).sum().backward()
    assert w.grad.tolist() == [1.5, 2.0]
