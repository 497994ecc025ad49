"""Tensor record basics on the reference device: reading views, creation, constants, seeds."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import scellis as sc

A = np.random.default_rng(5).standard_normal((4, 6))


def test_reading_views_that_start_inside_their_buffer():
    t = sc.tensor(A)
    np.testing.assert_array_equal(np.array(t[2].tolist()), A[2])  # contiguous, offset 12
    np.testing.assert_array_equal(np.array(t[1:3].tolist()), A[1:3])
    np.testing.assert_array_equal(np.array(t[1:, ::2].tolist()), A[1:, ::2])
    assert t[3, 5].item() == A[3, 5]


def test_await_read_and_no_sync_read_inside_a_loop():
    t = sc.tensor(A)

    async def main():
        got = await t[1].read()
        with pytest.raises(sc.ScellisError):
            t.tolist()
        return got

    np.testing.assert_array_equal(np.array(asyncio.run(main())), A[1])


def test_tensor_from_a_tensor_keeps_dtype_unless_told():
    t = sc.tensor(A)
    assert t.dtype == sc.f64
    assert sc.tensor(t).dtype == sc.f64
    assert sc.tensor(t, dtype="f32").dtype == sc.f32
    assert sc.tensor(sc.tensor([1, 2])).dtype == sc.i32
    np.testing.assert_array_equal(np.array(sc.tensor(t).tolist()), A)


def test_numpy_dtypes_are_kept():
    assert sc.tensor(A.astype(np.float32)).dtype == sc.f32
    assert sc.tensor(np.arange(3, dtype=np.int32)).dtype == sc.i32
    assert sc.tensor(np.array([True, False])).dtype == sc.bool_


def test_scalar_constants_keep_the_sign_of_zero():
    x = sc.tensor([1.0, 2.0], dtype="f64")
    assert (x * 0.0).tolist() == [0.0, 0.0]
    assert [np.copysign(1, v) for v in (x * -0.0).tolist()] == [-1.0, -1.0]
    assert (1.0 / (x * -0.0)).tolist() == [-np.inf, -np.inf]


def test_manual_seed_replays_the_streams():
    sc.manual_seed(17)
    a, b = sc.rand((5,)).tolist(), sc.randn((3, 2)).tolist()
    sc.manual_seed(17)
    assert sc.rand((5,)).tolist() == a
    assert sc.randn((3, 2)).tolist() == b
    sc.manual_seed(18)
    assert sc.rand((5,)).tolist() != a


def test_randn_moments():
    z = np.array(sc.randn((4000,), gen=sc.rng.Generator(3, "augment")).tolist())
    assert abs(z.mean()) < 0.06 and abs(z.std() - 1) < 0.06
