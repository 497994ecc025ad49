"""torch's elementwise methods beyond the primitives (runtime layer): a mixin of ``Tensor``.

Rounding (``floor``, ``ceil``, ``round``, ``trunc``, ``frac``), the accurate small-value
forms (``log1p``, ``expm1``), other bases (``log2``, ``exp2``...), hyperbolics,
``remainder``/``fmod``, ``div(rounding_mode=)``, ``nan_to_num``, ``lerp``, ``addcmul``
and the checks ``isnan``/``isinf``/``isfinite``: each is a composition of primitives, so
it runs on every device and autograd follows it.

Rounding goes through an i32 cast, which truncates; a float of magnitude 2^23 or more is
already an integer (and inf/NaN stay themselves), so those pass through unchanged and the
cast never sees a value it cannot hold. Rounding has a zero gradient, as in torch.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from .tensor_math import constant, pair

_EXACT = 8388608.0  # 2^23: every f32 at least this large is an integer
_F32_MAX = 3.4028234663852886e38


def _zero_grad(node, g):
    return (g.zeros_like(),)


def _trunc_values(x):
    small = x.abs() < _EXACT  # False for inf and NaN
    safe = x.where(small, 0.0)
    return safe.cast("i32").cast(x.dtype).where(small, x)


def _rounded(x, how: str):
    """``x`` rounded ``how`` (trunc, floor, ceil, half_even) with torch's zero gradient."""
    if not x.dtype.is_float:
        return x

    def forward(v, how):
        t = _trunc_values(v)
        if how == "floor":
            return t - (t > v).cast(v.dtype)
        if how == "ceil":
            return t + (t < v).cast(v.dtype)
        if how == "half_even":  # the fraction is exact, so ties are seen exactly
            frac = (v - t).abs()
            odd = (t - (t * 0.5).floor() * 2.0).abs() > 0.5
            up = (frac > 0.5).logical_or((frac == 0.5).logical_and(odd))
            return t + v.sign() * up.cast(v.dtype)
        return t

    return x.with_vjp(f"round_{how}", forward, _zero_grad, how=how)


# the rules read the result only (a with_vjp node keeps no input): 1 / (1 + x) is
# exp(-log1p(x)), and 1 / (1 + x^2) is cos(atan(x))^2
def _log1p_grad(node, g):
    return (g * (-node.saved["out"]).exp(),)


def _expm1_grad(node, g):
    return (g * (node.saved["out"] + 1.0),)


def _log1p(v):
    # log(u) * x / (u - 1) cancels the rounding of u = 1 + x (Goldberg's form)
    u = v + 1.0
    d = u - 1.0
    return (u.log() * (v / d.where(d != 0.0, 1.0))).where(d != 0.0, v)


def _expm1(v):
    u = v.exp()
    lg = u.log()
    ok = (u != 1.0).logical_and(lg.abs() < _F32_MAX)
    return ((u - 1.0) * (v / lg.where(ok, 1.0))).where(ok, (u - 1.0).where(u != 1.0, v))


def _atan_values(v):
    """atan by two reductions (1/x beyond 1, then the half-angle step to |t| <= tan(pi/8))
    and the odd Taylor series there, exact to f32 rounding."""
    big = v.abs() > 1.0
    r = (1.0 / v.where(big, 1.0)).where(big, v)
    t = r / ((r * r + 1.0).sqrt() + 1.0)
    t2, term, total = t * t, t, t
    for k in range(1, 10):  # |t| <= 0.415: the 19th power is below f32's resolution
        term = term * t2 * -1.0
        total = total + term * (1.0 / (2 * k + 1))
    near = total * 2.0
    return (v.sign() * (math.pi / 2) - near).where(big, near)


def _atan_grad(node, g):
    return (g * node.saved["out"].cos().square(),)


def _float(x):
    return x if x.dtype.is_float else x.cast("f32")


class TorchMathMethods:
    """torch-named elementwise methods written over primitives; no state of its own."""

    __slots__ = ()

    # -- rounding --
    def trunc(self):
        return _rounded(self, "trunc")

    fix = trunc

    def floor(self):
        return _rounded(self, "floor")

    def ceil(self):
        return _rounded(self, "ceil")

    def round(self, decimals=0):
        """Half to even, as torch (and IEEE) round; ``decimals`` scales by 10^decimals."""
        if not decimals:
            return _rounded(self, "half_even")
        scale = 10.0**decimals
        return _rounded(self * scale, "half_even") / scale

    def frac(self):
        return self - self.trunc()

    # -- logs and exponentials --
    def log1p(self):
        return _float(self).with_vjp("log1p", _log1p, _log1p_grad)

    def expm1(self):
        return _float(self).with_vjp("expm1", _expm1, _expm1_grad)

    def log2(self):
        return _float(self).log() * (1.0 / math.log(2.0))

    def log10(self):
        return _float(self).log() * (1.0 / math.log(10.0))

    def exp2(self):
        return (_float(self) * math.log(2.0)).exp()

    def sinh(self):
        x = _float(self)
        return (x.expm1() - (-x).expm1()) * 0.5

    def cosh(self):
        x = _float(self)
        return (x.exp() + (-x).exp()) * 0.5

    def tan(self):
        x = _float(self)
        return x.sin() / x.cos()

    def atan(self):
        return _float(self).with_vjp("atan", _atan_values, _atan_grad)

    arctan = atan

    def atan2(self, other):
        """The angle of (other, self) in (-pi, pi]: atan(self / other) moved to the
        quadrant of the point."""
        y, x = pair(_float(self), other)
        base = (y / x).atan()
        turn = (y.sign().where(y != 0.0, 1.0)) * math.pi
        return (base + turn).where(x < 0.0, base)

    arctan2 = atan2

    def asin(self):
        x = _float(self)
        return (x / (1.0 - x * x).sqrt()).atan()

    arcsin = asin

    def acos(self):
        return self.asin() * -1.0 + math.pi / 2

    arccos = acos

    def reciprocal(self):
        return 1.0 / _float(self)

    def xlogy(self, other):
        """``self * log(other)``, 0 where ``self`` is 0 (torch's convention)."""
        a, b = pair(_float(self), other)
        return (a * b.log()).where(a != 0.0, 0.0)

    # -- checks --
    def isnan(self):
        return self != self

    def isinf(self):
        if not self.dtype.is_float:
            return self != self
        return self.abs() == float("inf")

    def isfinite(self):
        if not self.dtype.is_float:
            return self == self
        return (self.abs() < float("inf")).logical_and(self == self)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN, +inf and -inf replaced (the infinities by the dtype's largest values)."""
        if not self.dtype.is_float:
            return self
        big = 65504.0 if self.dtype.name == "f16" else _F32_MAX
        hi = big if posinf is None else posinf
        lo = -big if neginf is None else neginf
        x = self.where(self == self, float(nan))
        x = x.where(x != float("inf"), float(hi))
        return x.where(x != float("-inf"), float(lo))

    # -- division and remainders --
    def div(self, other, *, rounding_mode=None):
        """torch's ``div``: true division, or rounded ``"trunc"``/``"floor"``."""
        if rounding_mode is None:
            return self / other
        if rounding_mode not in ("trunc", "floor"):
            raise ScellisError(f"rounding_mode is None, 'trunc' or 'floor', not {rounding_mode!r}")
        a, b = pair(self, other)
        if not a.dtype.is_float:
            q = _float(a) / _float(b)
            return (q.floor() if rounding_mode == "floor" else q.trunc()).cast(a.dtype)
        q = a / b
        return q.floor() if rounding_mode == "floor" else q.trunc()

    divide = div
    true_divide = div

    def floor_divide(self, other):
        return self.div(other, rounding_mode="floor")

    def remainder(self, other):
        """``self - floor(self / other) * other``: the sign of the divisor (Python's %)."""
        a, b = pair(self, other)
        return a - a.div(b, rounding_mode="floor") * b

    def __mod__(self, other):
        return self.remainder(other)

    def __rmod__(self, other):
        a, b = pair(other, self)
        return a.remainder(b)

    def fmod(self, other):
        """``self - trunc(self / other) * other``: the sign of the dividend (C's fmod)."""
        a, b = pair(self, other)
        return a - a.div(b, rounding_mode="trunc") * b

    # -- clamps and blends --
    def clamp_min(self, min):  # noqa: A002 (torch's name)
        return self.clamp(min=min)

    def clamp_max(self, max):  # noqa: A002
        return self.clamp(max=max)

    def clip(self, min=None, max=None):  # noqa: A002
        return self.clamp(min, max)

    def lerp(self, end, weight):
        """``self + weight * (end - self)``."""
        return self + (end - self) * weight

    def addcmul(self, tensor1, tensor2, *, value=1):
        return self + tensor1 * tensor2 * value

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return self + tensor1 / tensor2 * value

    def multiply(self, other):
        return self * other

    def subtract(self, other, *, alpha=1):
        return self - (other * alpha if alpha != 1 else other)

    def logical_xor(self, other):
        a, b = pair(self, other)
        return a.cast("bool") != b.cast("bool")

    def bitwise_not(self):
        if self.dtype.kind != "b":
            raise ScellisError("bitwise_not: only bool tensors here (use ~mask)")
        return self.logical_not()

    def heaviside(self, values):
        zero = constant(0, self)
        return (self > zero).cast(self.dtype).where(self != zero, values)
