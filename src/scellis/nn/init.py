"""torch.nn.init's initialisers (nn layer): overwrite a parameter in place.

Draws come from a Philox stream (``generator=``, else the eager ``init`` stream, the
one blocks draw their weights from), so a seed fixes them on every device. Each
writes into the tensor itself, under no_grad, keeping the object an optimizer holds.
"""

from __future__ import annotations

import math

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..runtime.creation import generator as eager_stream
from ..runtime.creation import rand, randn
from ..runtime.inplace import write_into
from ..runtime.tensor import Tensor

_GAINS = {"linear": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3, "relu": math.sqrt(2.0)}


def calculate_gain(nonlinearity: str, param=None) -> float:
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity not in _GAINS:
        raise ScellisError(f"no gain for {nonlinearity!r}; known: {sorted(_GAINS)}")
    return _GAINS[nonlinearity]


def _fans(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ScellisError(f"fan in and out need a tensor of 2+ dims, got {t.shape}")
    field = 1
    for d in t.shape[2:]:
        field *= d
    return t.shape[1] * field, t.shape[0] * field


@no_grad()
def uniform_(t: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    u = rand(t.shape, t.device, "f32", generator or eager_stream("init"))
    write_into(t, u * (b - a) + a)
    return t


@no_grad()
def normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    z = randn(t.shape, t.device, "f32", generator or eager_stream("init"))
    write_into(t, z * std + mean)
    return t


@no_grad()
def constant_(t: Tensor, val: float) -> Tensor:
    write_into(t, t.full_like(val))
    return t


def zeros_(t: Tensor) -> Tensor:
    return constant_(t, 0.0)


def ones_(t: Tensor) -> Tensor:
    return constant_(t, 1.0)


def xavier_uniform_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound, generator)


def xavier_normal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _fans(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(t, a, mode, nonlinearity) -> float:
    fan_in, fan_out = _fans(t)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    bound = math.sqrt(3.0) * _kaiming_std(t, a, mode, nonlinearity)
    return uniform_(t, -bound, bound, generator)


def kaiming_normal_(t, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return normal_(t, 0.0, _kaiming_std(t, a, mode, nonlinearity), generator)
