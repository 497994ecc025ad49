"""Tensor's elementwise methods (runtime layer): unary, binary, comparison, logical ops.

``TensorMath`` is a mixin of ``Tensor``: each method dispatches one primitive from the
op table's elementwise lists (or its operator spelling), after turning Python scalars
into cached 0-d constants, promoting dtypes and broadcasting.
"""

from __future__ import annotations

from collections import OrderedDict

from ..base.dtypes import DType, as_dtype, bool_, f32, i32, promote
from ..base.shapes import broadcast_shapes
from .primitive import apply_op, run_primitive

# -- constants: python scalars become cached 0-d tensors on the operand's device --
_CONST_CACHE: OrderedDict = OrderedDict()
_CONST_CACHE_SIZE = 512


def _const(value, dtype: DType, like):
    """``value`` as a 0-d tensor of ``dtype`` on the device (and class) of ``like``."""
    device = like.device
    # repr keeps -0.0 apart from 0.0, which compare (and hash) equal
    key = (id(device), dtype.name, type(value), repr(value))
    t = _CONST_CACHE.get(key)
    if t is None:
        attrs = {"shape": (), "value": value, "dtype": dtype.name}
        t = run_primitive(type(like), "full", (), device, attrs)
        _CONST_CACHE[key] = t
        if len(_CONST_CACHE) > _CONST_CACHE_SIZE:
            _CONST_CACHE.popitem(last=False)
    else:
        _CONST_CACHE.move_to_end(key)
    return t


def constant(value, like):
    """``value`` as the cached 0-d constant of ``like``'s dtype, on its device."""
    return _const(value, like.dtype, like)


def _scalar_dtype(value, like: DType) -> DType:
    if isinstance(value, bool):
        return like if like != bool_ else bool_
    if isinstance(value, int):
        return like if like != bool_ else i32
    return like if like.is_float else f32


def pair(a, b):
    """Two tensors of one dtype from tensor/scalar operands (a NumPy operand taken as
    torch takes it: its number, or a tensor of its values)."""
    if not isinstance(a, TensorMath):
        if hasattr(a, "__array_interface__"):
            a = b._array_operand(a)
        if not isinstance(a, TensorMath):
            a = _const(a, _scalar_dtype(a, b.dtype), b)
    if not isinstance(b, TensorMath):
        if hasattr(b, "__array_interface__"):
            b = a._array_operand(b)
        if not isinstance(b, TensorMath):
            b = _const(b, _scalar_dtype(b, a.dtype), a)
    if a.dtype is not b.dtype and a.dtype != b.dtype:  # one object: the common case, no call
        dt = promote(a.dtype, b.dtype)
        a, b = a.cast(dt), b.cast(dt)
    return a, b


def broadcast(*ts):
    if len(ts) == 2 and ts[0].shape == ts[1].shape:  # the common case: nothing to expand
        return list(ts)
    shape = broadcast_shapes(*(t.shape for t in ts))
    return [t if t.shape == shape else t.expand(shape) for t in ts]


def _binary(op: str, a, b):
    a, b = pair(a, b)
    if a.shape != b.shape:
        a, b = broadcast(a, b)
    # run_primitive itself: every operator comes here, and apply_op's keywords cost a dict
    return run_primitive(type(a), op, (a, b), None, {})


def _truediv(a, b):
    """``a / b``, torch's true division: two integer (or bool) operands give f32."""
    a, b = pair(a, b)
    if not a.dtype.is_float:
        a, b = a.cast(f32), b.cast(f32)
    return _binary("div", a, b)


def _floordiv(a, b):
    """``a // b``: division rounded towards minus infinity (torch, numpy); the integer
    div primitive floors, a float quotient is floored after (``Tensor.floor``)."""
    a, b = pair(a, b)
    if a.dtype.is_float:
        return _binary("div", a, b).floor()
    return _binary("div", a, b)


def _as_float(x):
    """An integer or bool input of a float-only op as f32 (torch's int-to-float promotion)."""
    return x if x.dtype.is_float else x.cast(f32)


class TensorMath:
    """Elementwise methods; every name in the op table's elementwise lists is one."""

    __slots__ = ()

    # -- unary, float inputs --
    def exp(self):
        return apply_op("exp", (_as_float(self),))

    def log(self):
        return apply_op("log", (_as_float(self),))

    def sqrt(self):
        return apply_op("sqrt", (_as_float(self),))

    def rsqrt(self):
        return apply_op("rsqrt", (_as_float(self),))

    def tanh(self):
        return apply_op("tanh", (_as_float(self),))

    def sigmoid(self):
        return apply_op("sigmoid", (_as_float(self),))

    def gelu_tanh(self):
        return apply_op("gelu_tanh", (self,))

    def gelu_erf(self):
        return apply_op("gelu_erf", (self,))

    def silu(self):
        return apply_op("silu", (self,))

    def softplus(self):
        return apply_op("softplus", (self,))

    def erf(self):
        return apply_op("erf", (_as_float(self),))

    def sin(self):
        return apply_op("sin", (_as_float(self),))

    def cos(self):
        return apply_op("cos", (_as_float(self),))

    # -- unary, any dtype --
    def neg(self):
        return apply_op("neg", (self,))

    def abs(self):
        return apply_op("abs", (self,))

    def relu(self):
        return apply_op("relu", (self,))

    def sign(self):
        return apply_op("sign", (self,))

    def logical_not(self):
        return apply_op("logical_not", (self,))

    def square(self):
        return self * self

    # -- binary --
    def add(self, other):
        return _binary("add", self, other)

    def sub(self, other):
        return _binary("sub", self, other)

    def mul(self, other):
        return _binary("mul", self, other)

    def div(self, other):
        """The div primitive: true division on floats, floor division on integers."""
        return _binary("div", self, other)

    def pow(self, other):
        return _binary("pow", self, other)

    def maximum(self, other):
        return _binary("maximum", self, other)

    def minimum(self, other):
        return _binary("minimum", self, other)

    # -- comparisons and logic --
    def eq(self, other):
        return _binary("eq", self, other)

    def ne(self, other):
        return _binary("ne", self, other)

    def lt(self, other):
        return _binary("lt", self, other)

    def le(self, other):
        return _binary("le", self, other)

    def gt(self, other):
        return _binary("gt", self, other)

    def ge(self, other):
        return _binary("ge", self, other)

    def logical_and(self, other):
        return _binary("logical_and", self, other)

    def logical_or(self, other):
        return _binary("logical_or", self, other)

    # -- operators --
    def __add__(self, other):
        return _binary("add", self, other)

    def __radd__(self, other):
        return _binary("add", other, self)

    def __sub__(self, other):
        return _binary("sub", self, other)

    def __rsub__(self, other):
        return _binary("sub", other, self)

    def __mul__(self, other):
        return _binary("mul", self, other)

    def __rmul__(self, other):
        return _binary("mul", other, self)

    def __truediv__(self, other):
        return _truediv(self, other)

    def __rtruediv__(self, other):
        return _truediv(other, self)

    def __floordiv__(self, other):
        return _floordiv(self, other)

    def __rfloordiv__(self, other):
        return _floordiv(other, self)

    def __pow__(self, other):
        return _binary("pow", self, other)

    def __rpow__(self, other):
        return _binary("pow", other, self)

    def __eq__(self, other):
        return _binary("eq", self, other)

    def __ne__(self, other):
        return _binary("ne", self, other)

    def __lt__(self, other):
        return _binary("lt", self, other)

    def __le__(self, other):
        return _binary("le", self, other)

    def __gt__(self, other):
        return _binary("gt", self, other)

    def __ge__(self, other):
        return _binary("ge", self, other)

    def __and__(self, other):
        return _binary("logical_and", self, other)

    def __or__(self, other):
        return _binary("logical_or", self, other)

    def __neg__(self):
        return apply_op("neg", (self,))

    def __abs__(self):
        return apply_op("abs", (self,))

    def __invert__(self):
        return apply_op("logical_not", (self,))

    # defining __eq__ would otherwise make tensors unhashable; they hash by identity
    __hash__ = object.__hash__

    # -- dtype and selection --
    def cast(self, dtype):
        dt = as_dtype(dtype)
        return self if dt == self.dtype else apply_op("cast", (self,), dtype=dt.name)

    def to(self, dtype):
        return self.cast(dtype)

    def float(self):
        return self.cast(f32)

    def clamp(self, min=None, max=None):
        return apply_op("clamp", (self,), lo=min, hi=max)

    def where(self, cond, other):
        """``self`` where ``cond`` holds, else ``other`` (torch's ``Tensor.where``)."""
        x, other = pair(self, other)
        cond, x, other = broadcast(cond, x, other)
        return apply_op("where", (cond, x, other))
