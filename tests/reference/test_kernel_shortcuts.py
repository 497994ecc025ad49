"""The reference kernels' shortcuts against NumPy's plain definitions, bit for bit.

Short-row extrema go through a transposed copy, whole-row gathers through one ``take``,
scatter_add through flat positions: each must give exactly what the direct NumPy
expression gives, on random shapes, layouts and dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest

from scellis.devices.reference.kernels import KERNELS

RNG = np.random.default_rng(17)


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op,fn", [("max", np.max), ("min", np.min)])
def test_extremum_over_the_last_axis_is_numpys(op, fn, dtype):
    for _ in range(20):
        shape = tuple(int(n) for n in RNG.integers(1, 7, RNG.integers(2, 5)))
        shape = shape[:-1] + (int(RNG.integers(2, 40)),)
        x = (RNG.standard_normal(shape) * 50).astype(dtype)
        if x.dtype.kind == "f":
            x.reshape(-1)[RNG.integers(0, x.size, 3)] = [np.nan, np.inf, -np.inf]
        view = x if RNG.random() < 0.5 else np.swapaxes(x, 0, -1)  # strided too
        for keepdim in (False, True):
            attrs = {"axes": (view.ndim - 1,), "keepdim": keepdim}
            _same(KERNELS[op]([view], attrs, [dtype]), fn(view, axis=-1, keepdims=keepdim))


def test_gather_of_whole_rows_is_take_along_axis():
    for _ in range(50):
        nd = int(RNG.integers(1, 4))
        shape = tuple(int(n) for n in RNG.integers(1, 6, nd))
        axis = int(RNG.integers(0, nd))
        ishape = tuple(
            int(RNG.integers(1, 7)) if d == axis else int(RNG.integers(1, n + 1))
            for d, n in enumerate(shape)
        )
        x = RNG.standard_normal(shape).astype(np.float32)
        line = RNG.integers(0, shape[axis], ishape[axis]).astype(np.int32)
        strides = [0] * nd
        strides[axis] = line.itemsize
        idx = np.lib.stride_tricks.as_strided(line, ishape, strides)  # an embedding's index
        region = tuple(slice(0, n) if d != axis else slice(None) for d, n in enumerate(ishape))
        want = np.take_along_axis(x[region], idx.astype(np.int64), axis=axis)
        _same(KERNELS["gather"]([x, idx], {"axis": axis}, [np.float32]), want)


def test_scatter_add_adds_in_the_order_of_index_grids():
    for _ in range(50):
        nd = int(RNG.integers(1, 4))
        shape = tuple(int(n) for n in RNG.integers(1, 6, nd))
        axis = int(RNG.integers(0, nd))
        ishape = tuple(
            int(RNG.integers(1, 9)) if d == axis else int(RNG.integers(1, n + 1))
            for d, n in enumerate(shape)
        )
        idx = RNG.integers(0, shape[axis], ishape).astype(np.int32)  # repeats collide
        src = (RNG.standard_normal(ishape) * 1e3).astype(np.float32)
        want = np.zeros(shape, np.float32)
        grids = list(np.indices(ishape))
        grids[axis] = idx.astype(np.int64)
        np.add.at(want, tuple(grids), src)
        attrs = {"axis": axis, "shape": shape}
        _same(KERNELS["scatter_add"]([src, idx], attrs, [np.float32]), want)
