"""torch's trailing-underscore methods and random fills (runtime layer): a mixin of ``Tensor``.

Each ``name_`` is ``name`` written back through ``_assign``, the one in-place write
(refused on a leaf that requires grad unless gradients are off, as in torch).
``normal_``, ``uniform_``, ``bernoulli_`` and ``exponential_`` fill from the eager
Philox streams (or ``generator``'s): the habit is torch's, the draws are the engine's.
"""

from __future__ import annotations

import math

# torch's in-place methods that are the out-of-place method written back
_WRITE_BACK = (
    "abs", "neg", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "relu", "floor", "ceil",
    "round", "trunc", "frac", "clamp_min", "clamp_max", "clip", "pow", "square", "sign",
    "reciprocal", "nan_to_num", "lerp", "addcmul", "addcdiv", "scatter", "scatter_add",
    "index_add", "index_fill", "index_put", "log1p", "expm1", "sin", "cos", "remainder", "fmod",
    "maximum", "minimum", "logical_not", "t", "transpose", "unsqueeze", "squeeze",
)  # fmt: skip


def _write_back(name: str):
    def method(self, *args, **kwargs):
        return self._assign_any(getattr(self, name)(*args, **kwargs), f"{name}_")

    method.__name__ = f"{name}_"
    method.__doc__ = f"``{name}`` written into this tensor (torch's ``{name}_``)."
    return method


def _draws(x, generator):
    from .creation import rand  # creation sits above the tensor class

    return rand(x.shape, x.device, "f32", generator)


class TorchInPlaceMethods:
    """In-place spellings and random fills; no state of its own."""

    __slots__ = ()

    def _assign_any(self, new, what: str):
        """``_assign``, or, where the shape changes (``t_``, ``unsqueeze_``), this tensor
        pointed at the new view's storage and shape."""
        if tuple(new.shape) == tuple(self.shape):
            return self._assign(new, what)
        self._buf, self.shape, self.strides = new._buf, new.shape, new.strides
        self.offset, self._node = new.offset, new._node
        return self

    def add(self, other, *, alpha=1):
        return super().add(other * alpha if alpha != 1 else other)

    def sub(self, other, *, alpha=1):
        return super().sub(other * alpha if alpha != 1 else other)

    def div_(self, other, *, rounding_mode=None):
        return self._assign(self.div(other, rounding_mode=rounding_mode), "div_")

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        return self._assign(_draws(self, generator) * (b - a) + a, "uniform_")

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        u1, u2 = _draws(self, generator), _draws(self, generator)
        z = ((1.0 - u1).log() * -2.0).sqrt() * (u2 * (2 * math.pi)).cos()  # Box-Muller
        return self._assign(z * std + mean, "normal_")

    def bernoulli_(self, p=0.5, *, generator=None):
        return self._assign((_draws(self, generator) < p).cast(self.dtype), "bernoulli_")

    def exponential_(self, lambd=1.0, *, generator=None):
        return self._assign((1.0 - _draws(self, generator)).log() * (-1.0 / lambd), "exponential_")

    def bernoulli(self, *, generator=None):
        """0/1 draws with this tensor's values as the probabilities."""
        return (_draws(self, generator) < self).cast(self.dtype)

    def new_tensor(self, data, *, dtype=None, requires_grad=False):
        from .creation import tensor

        return tensor(data, self.device, dtype or self.dtype, requires_grad)

    def new_empty(self, *size, dtype=None):
        return self.new_full(size, 0, dtype=dtype)


for _name in _WRITE_BACK:
    setattr(TorchInPlaceMethods, f"{_name}_", _write_back(_name))
