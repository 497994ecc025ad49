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
from ..runtime.factories import as_tensor
from ..runtime.inplace import write_into
from ..runtime.tensor import Tensor

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")  # fmt: skip
_GAINS = {**dict.fromkeys(_LINEAR, 1.0), "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 0.75}


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


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    """torch's private helper, which tutorials call to redo a layer's default init
    (``bound = 1 / math.sqrt(fan_in)`` for a bias)."""
    return _fans(t)


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


@no_grad()
def trunc_normal_(t: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:  # fmt: skip
    """N(mean, std) restricted to [a, b]: draws outside are drawn again (a few rounds,
    then the rare rest clamped), which is the truncated normal torch samples."""
    gen = generator or eager_stream("init")
    z = randn(t.shape, t.device, "f32", gen) * std + mean
    for _ in range(8):
        outside = (z < a).logical_or(z > b)
        z = z.where(outside.logical_not(), randn(t.shape, t.device, "f32", gen) * std + mean)
    write_into(t, z.clamp(a, b))
    return t


@no_grad()
def eye_(t: Tensor) -> Tensor:
    """The identity in a 2-d tensor (ones on the diagonal of a rectangle)."""
    if t.ndim != 2:
        raise ScellisError(f"eye_ takes a 2-d tensor, got {t.shape}")
    rows = t.arange_like(t.shape[0]).reshape((t.shape[0], 1))
    cols = t.arange_like(t.shape[1]).reshape((1, t.shape[1]))
    write_into(t, (rows == cols).cast(t.dtype))
    return t


@no_grad()
def dirac_(t: Tensor, groups: int = 1) -> Tensor:
    """A conv weight [out, in, *k] that passes its input through (torch's dirac_)."""
    if t.ndim not in (3, 4, 5):
        raise ScellisError(f"dirac_ takes a 3-, 4- or 5-d conv weight, got {t.shape}")
    out_g = t.shape[0] // groups
    centre = [k // 2 for k in t.shape[2:]]
    values = [0.0] * t.numel
    strides = [1] * t.ndim
    for i in range(t.ndim - 2, -1, -1):
        strides[i] = strides[i + 1] * t.shape[i + 1]
    for g in range(groups):
        for d in range(min(out_g, t.shape[1])):
            at = (g * out_g + d) * strides[0] + d * strides[1]
            at += sum(c * s for c, s in zip(centre, strides[2:], strict=True))
            values[at] = 1.0
    write_into(t, as_tensor(values, dtype=t.dtype.name, device=t.device.name).reshape(t.shape))
    return t


@no_grad()
def orthogonal_(t: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR of a normal draw, R's diagonal made
    positive (torch's rule, giving the uniform distribution over such matrices); Gram-
    Schmidt over the shorter side, whose R has a positive diagonal by construction."""
    if t.ndim < 2:
        raise ScellisError(f"orthogonal_ takes a tensor of 2+ dims, got {t.shape}")
    rows = t.shape[0]
    cols = t.numel // rows
    a = randn((rows, cols), t.device, "f32", generator or eager_stream("init"))
    tall = a if rows >= cols else a.mT  # columns to orthonormalise
    q = None
    for j in range(tall.shape[1]):
        v = tall.slice([0, j], [tall.shape[0], j + 1])
        for _ in range(2):  # twice is enough in float32 (Giraud et al.)
            if q is not None:
                v = v - q @ (q.mT @ v)
        v = v / v.square().sum().sqrt()
        q = v if q is None else q.cat([v], 1)
    m = q if rows >= cols else q.mT
    write_into(t, (m * gain).reshape(t.shape))
    return t
