"""Shape arithmetic (base.shapes) against NumPy: broadcasting, reshape inference, view strides."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

from scellis.base.errors import ShapeError
from scellis.base.shapes import (
    broadcast_shapes,
    contiguous_strides,
    infer_reshape,
    is_contiguous,
    norm_axes,
    view_strides,
)

small_shape = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@given(mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=4, min_side=0))
def test_broadcast_shapes_matches_numpy(shapes):
    assert broadcast_shapes(*shapes.input_shapes) == np.broadcast_shapes(*shapes.input_shapes)


@given(st.lists(small_shape, min_size=1, max_size=3))
def test_broadcast_shapes_agrees_on_failure(shapes):
    try:
        want = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ShapeError):
            broadcast_shapes(*shapes)
    else:
        assert broadcast_shapes(*shapes) == want


def test_contiguous_strides():
    assert contiguous_strides((3, 7, 2)) == (14, 2, 1)
    assert contiguous_strides(()) == ()
    assert is_contiguous((3, 1, 2), (2, 99, 1))
    assert not is_contiguous((3, 2), (1, 3))


@given(small_shape, st.data())
def test_infer_reshape(shape, data):
    n = int(np.prod(shape, dtype=np.int64))
    new = list(_factor_shape(n, data))
    if new and n:
        new[data.draw(st.integers(0, len(new) - 1))] = -1
    try:
        want = np.empty(shape).reshape(new).shape
    except ValueError:
        with pytest.raises(ShapeError):
            infer_reshape(shape, new)
    else:
        assert infer_reshape(shape, new) == want


def test_infer_reshape_errors():
    with pytest.raises(ShapeError):
        infer_reshape((3, 4), (5, -1))
    with pytest.raises(ShapeError):
        infer_reshape((3, 4), (-1, -1))
    with pytest.raises(ShapeError):
        infer_reshape((3, 4), (2, 5))


def test_norm_axes():
    assert norm_axes(None, 3) == (0, 1, 2)
    assert norm_axes(-1, 3) == (2,)
    assert norm_axes((2, -3, 0), 3) == (0, 2)
    with pytest.raises(ShapeError):
        norm_axes(3, 3)


def _factor_shape(n, data):
    """A random shape with ``n`` elements (size-1 dims sprinkled in)."""
    if n == 0:
        return data.draw(st.permutations([0] + data.draw(st.lists(st.integers(1, 3), max_size=2))))
    factors, k, m = [], 2, n
    while m > 1:
        while m % k == 0:
            factors.append(k)
            m //= k
        k += 1
    ndim = data.draw(st.integers(0 if n == 1 else 1, 4))
    dims = [1] * max(ndim, 1)
    for f in factors:
        dims[data.draw(st.integers(0, len(dims) - 1))] *= f
    return tuple(dims if ndim else [])


@st.composite
def strided_layouts(draw):
    """(buffer size, shape, strides, offset) of a permuted, sliced, expanded view."""
    base = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    shape, strides = list(base), list(contiguous_strides(base))
    perm = draw(st.permutations(range(len(base))))
    shape, strides = [shape[p] for p in perm], [strides[p] for p in perm]
    offset = 0
    for i, d in enumerate(shape):
        start = draw(st.integers(0, d - 1))
        step = draw(st.integers(1, 3))
        stop = draw(st.integers(start + 1, d))
        offset += start * strides[i]
        shape[i], strides[i] = (stop - start + step - 1) // step, strides[i] * step
    for i, d in enumerate(shape):
        if d == 1 and draw(st.booleans()):
            shape[i], strides[i] = draw(st.integers(1, 4)), 0  # an expanded dim
    return int(np.prod(base)), tuple(shape), tuple(strides), offset


def _as_strided(buf, shape, strides, offset):
    return np.lib.stride_tricks.as_strided(
        buf[offset:], shape=shape, strides=[s * buf.itemsize for s in strides]
    )


@settings(max_examples=400, deadline=None)
@given(strided_layouts(), st.data())
def test_view_strides_against_numpy_reshape(layout, data):
    size, shape, strides, offset = layout
    buf = np.arange(size, dtype=np.float64)
    arr = _as_strided(buf, shape, strides, offset)
    new = _factor_shape(arr.size, data)
    want = arr.reshape(new)
    try:
        arr.reshape(new, copy=False)
        numpy_views = True
    except ValueError:
        numpy_views = False
    got = view_strides(shape, strides, new)
    if got is None:
        assert not numpy_views, f"numpy views {shape}/{strides} as {new}; view_strides refused"
    else:
        assert len(got) == len(new)
        np.testing.assert_array_equal(_as_strided(buf, new, got, offset), want)


@pytest.mark.parametrize(
    "shape, strides, new, ok",
    [
        ((3, 4), (4, 1), (12,), True),
        ((3, 4), (1, 3), (12,), False),  # a transpose needs a copy to flatten
        ((3, 4), (1, 3), (3, 2, 2), True),  # splitting one dim keeps a view
        ((3, 4), (1, 3), (2, 6), False),
        ((4, 3), (1, 4), (2, 2, 3), True),  # splitting the outer (strided) dim is fine
        ((2, 3), (0, 1), (6,), False),  # an expanded dim cannot be merged
        ((2, 3), (0, 1), (2, 3, 1), True),
    ],
)
def test_view_strides_examples(shape, strides, new, ok):
    got = view_strides(shape, strides, new)
    assert (got is not None) == ok
    if ok:
        buf = np.arange(20.0)
        want = _as_strided(buf, shape, strides, 0).reshape(new)
        np.testing.assert_array_equal(_as_strided(buf, new, got, 0), want)
