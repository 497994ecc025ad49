"""The reference device's whole-array erf/erfc against math.erf/math.erfc."""

from __future__ import annotations

import math

import numpy as np

from scellis.devices.reference import special


def test_series_and_fraction_agree_with_math_to_double_precision():
    z = np.linspace(-special._SPLIT + 1e-9, special._SPLIT - 1e-9, 4001)
    series = special._erf_series(z)
    np.testing.assert_allclose(series, [math.erf(v) for v in z], rtol=0, atol=1e-14)
    tail = np.linspace(special._SPLIT, 26.0, 4001)
    frac = special._erfc_fraction(tail)
    np.testing.assert_allclose(frac, [math.erfc(v) for v in tail], rtol=1e-12, atol=0)


def test_f32_results_round_like_math():
    x = np.random.default_rng(3).standard_normal(20000).astype(np.float32) * 4
    x[:5] = [0.0, -0.0, 2.5, -2.5, 9.5]
    for ours, theirs in ((special.erfc, math.erfc), (special.erf, math.erf)):
        want = np.array([theirs(float(v)) for v in x]).astype(np.float32)
        got = ours(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-37)
    x64 = x.astype(np.float64)
    assert special.erfc(x64).tolist() == [math.erfc(v) for v in x64]
