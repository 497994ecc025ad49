"""erf and erfc over whole arrays (devices layer): the reference device's exact GELU.

``math.erfc`` called once per element was most of a Transformer step on this device.
Here every element is computed in f64 with a few dozen whole-array NumPy operations,
from W. J. Cody's rational Chebyshev approximations ("Rational Chebyshev approximations
for the error function", Math. Comp. 23, 1969), the ones behind many libm's:

- |x| <= 0.46875: erf(x) = x P(x^2) / Q(x^2);
- 0.46875 < |x| <= 4: erfc(|x|) = exp(-x^2) P(|x|) / Q(|x|);
- |x| > 4: erfc(|x|) = exp(-x^2) / |x| (1/sqrt(pi) + P(1/x^2) / (x^2 Q(1/x^2)));
- |x| >= 28: erfc(|x|) = 0 (the exponential underflows);

with exp(-x^2), for f64 results, taken as exp(-s^2) exp(-(|x| - s)(|x| + s)), s = |x|
rounded down to a sixteenth, so the rounding of x^2 is not magnified by the exponential. Negative
arguments use erfc(-y) = 2 - erfc(y). The result is within a few f64 ulps of
``math.erfc`` (tests/reference/test_special_erf.py), so f16 and f32 results are
``math.erfc``'s correctly rounded value but where the two sit astride a rounding
boundary, and f64 results serve the f64 gradient checks.

Arrays of at most ``LOOP_MAX`` elements take ``math.erfc``/``math.erf`` element by
element instead, which is faster there. Which way an array goes depends on its size
alone, so results stay deterministic; the two agree to a few f64 ulps.
"""

from __future__ import annotations

import math

import numpy as np

# up to this many elements one ``math`` call per element is the cheaper way (the whole-
# array formula costs some fifty NumPy calls whatever the size; measured even at ~2k)
LOOP_MAX = 1024

_SMALL = 0.46875  # the first interval's end
_MIDDLE = 4.0  # the second interval's end
_CLAMP = 28.0  # exp(-28^2) underflows to 0: larger arguments (inf too) give erfc = 0
_RSQRT_PI = 0.56418958354775628695

# numerators and denominators, highest power first (Horner's order)
_A = (0.185777706184603153, 3.16112374387056560, 113.864154151050156, 377.485237685302021,
      3209.37758913846947)  # fmt: skip
_B = (1.0, 23.6012909523441209, 244.024637934444173, 1282.61652607737228,
      2844.23683343917062)  # fmt: skip
_C = (2.15311535474403846e-8, 0.564188496988670089, 8.88314979438837594, 66.1191906371416295,
      298.635138197400131, 881.952221241769090, 1712.04761263407058, 2051.07837782607147,
      1230.33935479799725)  # fmt: skip
_D = (1.0, 15.7449261107098347, 117.693950891312499, 537.181101862009858,
      1621.38957456669019, 3290.79923573345963, 4362.61909014324716, 3439.36767414372164,
      1230.33935480374942)  # fmt: skip
_P = (0.0163153871373020978, 0.305326634961232344, 0.360344899949804439,
      0.125781726111229246, 0.0160837851487422766, 6.58749161529837803e-4)  # fmt: skip
_Q = (1.0, 2.56852019228982242, 1.87295284992346047, 0.527905102951428412,
      0.0605183413124413191, 2.33520497626869185e-3)  # fmt: skip


def _horner(coef, t: np.ndarray) -> np.ndarray:
    """The polynomial with coefficients ``coef`` (highest power first) at ``t``, by
    Horner's rule in place: one multiply and one add per coefficient, on ``t``'s shape."""
    acc = t * coef[0]
    acc += coef[1]
    for c in coef[2:]:
        acc *= t
        acc += c
    return acc


def _ratio(num, den, t: np.ndarray) -> np.ndarray:
    """num(t) / den(t) by Horner's rule, coefficients highest power first (``num`` padded
    with leading zeros to ``den``'s length: exactly the unpadded sums, each step the
    same f64 multiply and add as in any other arrangement of the arrays)."""
    num = (0.0,) * (len(den) - len(num)) + tuple(num)
    return np.divide(_horner(num, t), _horner(den, t))


def _erf_small(x: np.ndarray) -> np.ndarray:
    """erf(x), accurate where |x| <= 0.46875."""
    x = np.minimum(np.maximum(x, -_SMALL), _SMALL)  # np.clip's values, without its wrapper
    return x * _ratio(_A, _B, x * x)


def _exp_neg_square(y: np.ndarray, exact: bool) -> np.ndarray:
    """exp(-y^2); ``exact``: split as Cody does, for f64 results (an f32 result cannot
    see the rounding of y^2, at most 27^2 f64 ulps)."""
    if not exact:
        return np.exp(-(y * y))
    s = np.floor(y * 16.0) / 16.0
    return np.exp(-s * s) * np.exp(-(y - s) * (y + s))


def _erfc_large(y: np.ndarray, exact: bool) -> np.ndarray:
    """erfc(y) for y > 0.46875; ``y`` is |x|."""
    yc = np.minimum(y, _CLAMP)
    r = _ratio(_C, _D, yc)
    # the third interval only where some value is in it
    if yc.size and np.maximum.reduce(yc, None) > _MIDDLE:
        y3 = np.maximum(yc, _MIDDLE)
        inv = 1.0 / (y3 * y3)
        tail = (_RSQRT_PI - inv * _ratio(_P, _Q, inv)) / y3
        r = np.where(yc <= _MIDDLE, r, tail)
    r *= _exp_neg_square(yc, exact)
    return r


def _erfc64(z: np.ndarray, exact: bool) -> np.ndarray:
    y = np.abs(z)
    big = _erfc_large(y, exact)
    return np.where(y <= _SMALL, 1.0 - _erf_small(z), np.where(z < 0, 2.0 - big, big))


def _erf64(z: np.ndarray, exact: bool) -> np.ndarray:
    y = np.abs(z)
    big = 1.0 - _erfc_large(y, exact)
    return np.where(y <= _SMALL, _erf_small(z), np.where(z < 0, -big, big))


def _each(fn, z: np.ndarray) -> np.ndarray:
    return np.fromiter(map(fn, z.tolist()), np.float64, z.size)


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc of ``x`` in ``x``'s dtype."""
    z = np.asarray(x, dtype=np.float64).reshape(-1)  # _ratio's rows want one axis
    if z.size <= LOOP_MAX:
        out = _each(math.erfc, z)
    else:
        out = _erfc64(z, x.dtype == np.float64)
    return out.astype(x.dtype).reshape(x.shape)


def erf(x: np.ndarray) -> np.ndarray:
    """erf of ``x`` in ``x``'s dtype."""
    z = np.asarray(x, dtype=np.float64).reshape(-1)
    out = _each(math.erf, z) if z.size <= LOOP_MAX else _erf64(z, x.dtype == np.float64)
    return out.astype(x.dtype).reshape(x.shape)
