"""The reference device's whole-array erf/erfc against math.erf/math.erfc."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scellis.devices.reference import special


def _points(rng) -> np.ndarray:
    """Random arguments in each interval of the approximation, both signs, the interval
    ends, the tails down to underflow and the special values."""
    ends = [0.0, -0.0, special._SMALL, special._MIDDLE, 26.5, 27.2, special._CLAMP, 40.0]
    spans = [(0, special._SMALL), (special._SMALL, special._MIDDLE), (special._MIDDLE, 30)]
    x = np.concatenate([rng.uniform(a, b, 4000) for a, b in spans] + [ends])
    return np.concatenate([x, -x])


def test_f64_within_a_few_ulps_of_math():
    z = _points(np.random.default_rng(5))
    assert z.size > special.LOOP_MAX  # the whole-array formula
    for ours, theirs in ((special.erfc, math.erfc), (special.erf, math.erf)):
        got = ours(z)
        want = np.array([theirs(v) for v in z])
        # relative to the f64 spacing; results below the smallest normal f64 lose bits
        # to the exponential's underflow (math's too), so an absolute bound there
        tiny = np.abs(want) < np.finfo(np.float64).tiny
        ulps = np.abs(got - want)[~tiny] / np.spacing(np.abs(want[~tiny]))
        assert ulps.max() <= 16, (ours.__name__, z[~tiny][ulps.argmax()], ulps.max())
        assert np.abs(got - want)[tiny].max(initial=0) < 1e-320


def test_small_arrays_are_math_itself():
    z = np.random.default_rng(6).standard_normal(special.LOOP_MAX) * 6
    assert special.erfc(z).tolist() == [math.erfc(v) for v in z]
    assert special.erf(z).tolist() == [math.erf(v) for v in z]


def test_small_and_large_arrays_round_alike_in_f32():
    x = (np.random.default_rng(12).standard_normal(40 * special.LOOP_MAX) * 4).astype(np.float32)
    for fn in (special.erfc, special.erf):
        whole = fn(x)
        parts = np.concatenate([fn(p) for p in np.split(x, 40)])
        assert np.count_nonzero(whole != parts) <= 1


def test_special_values():
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0] * special.LOOP_MAX)
    np.testing.assert_array_equal(special.erfc(x)[[0, 1, 3, 4]], [0.0, 2.0, 1.0, 1.0])
    np.testing.assert_array_equal(special.erf(x)[[0, 1, 3]], [1.0, -1.0, 0.0])
    assert np.isnan(special.erfc(x)[2]) and np.isnan(special.erf(x)[2])


def test_any_shape_is_elementwise():
    x = np.random.default_rng(4).standard_normal((3, 5, 7 * special.LOOP_MAX)) * 5
    for fn in (special.erfc, special.erf):
        got = fn(x)
        assert got.shape == x.shape
        np.testing.assert_array_equal(got.reshape(-1), fn(x.reshape(-1)))
        np.testing.assert_array_equal(fn(x[1:2, 3, ::2]), got[1:2, 3, ::2])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_results_round_like_math(dtype):
    x = (np.random.default_rng(3).standard_normal(20000) * 4).astype(dtype)
    x[:6] = [0.0, -0.0, special._SMALL, -special._SMALL, special._MIDDLE, 9.5]
    for ours, theirs in ((special.erfc, math.erfc), (special.erf, math.erf)):
        want = np.array([theirs(float(v)) for v in x]).astype(dtype)
        got = ours(x)
        assert got.dtype == dtype
        # the f64 value is within a few ulps of math's: it rounds to the same narrow value
        # but where the two straddle a rounding boundary, a one-in-millions event
        assert np.count_nonzero(got != want) <= 1
