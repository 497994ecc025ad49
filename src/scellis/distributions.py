"""torch.distributions' common families over tensors: Normal, Uniform, Bernoulli, Categorical.

Each has torch's constructor arguments and ``sample``, ``log_prob``, ``entropy``,
``mean``, ``variance`` (``rsample`` where torch has it: draws that gradients flow
through, the reparameterisation a VAE or a policy gradient uses); ``kl_divergence``
covers Normal-Normal, Bernoulli-Bernoulli and Categorical-Categorical. Parameters are
broadcast as in torch; draws come from the eager Philox streams, so they repeat from a
seed but are not torch's numbers.
"""

from __future__ import annotations

import math
import sys

from .autograd import no_grad
from .base.errors import ScellisError
from .runtime import creation as C
from .runtime.tensor import Tensor
from .runtime.tensor_math import broadcast
from .runtime.torch_functions import multinomial

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _t(x, like=None) -> Tensor:
    if isinstance(x, Tensor):
        return x if x.dtype.is_float else x.float()
    dev = like.device if isinstance(like, Tensor) else None
    return C.tensor(float(x), device=dev)


def _shape(sample_shape) -> tuple:
    return (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)


def _one_of(probs, logits, name):
    if (probs is None) == (logits is None):
        raise ScellisError(f"{name} takes probs or logits, exactly one of them")


class Distribution:
    """Base of the families: ``batch_shape``, ``sample``/``rsample`` and the shared names."""

    has_rsample = False
    batch_shape: tuple = ()

    def sample(self, sample_shape=()):
        with no_grad():
            return self._draw(_shape(sample_shape))

    def rsample(self, sample_shape=()):
        if not self.has_rsample:
            raise ScellisError(
                f"{type(self).__name__} has no rsample (its draws are discrete); use "
                "sample() with log_prob() (the score-function estimator)"
            )
        return self._draw(_shape(sample_shape))

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _draw(self, shape):
        raise NotImplementedError


class Normal(Distribution):
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        loc, scale = _t(loc, scale), _t(scale, loc)
        self.loc, self.scale = broadcast(loc, scale)
        self.batch_shape = tuple(self.loc.shape)

    def _draw(self, shape):
        eps = C.randn(shape + self.batch_shape, self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        v = _t(value, self.loc)
        return ((v - self.loc) / self.scale).square() * -0.5 - self.scale.log() - _LOG_SQRT_2PI

    def entropy(self):
        return self.scale.log() + (0.5 + _LOG_SQRT_2PI)

    def cdf(self, value):
        return ((_t(value, self.loc) - self.loc) / (self.scale * math.sqrt(2.0))).erf() * 0.5 + 0.5

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale.square()


class Uniform(Distribution):
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        low, high = _t(low, high), _t(high, low)
        self.low, self.high = broadcast(low, high)
        self.batch_shape = tuple(self.low.shape)

    def _draw(self, shape):
        u = C.rand(shape + self.batch_shape, self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        v = _t(value, self.low)
        inside = (v >= self.low).logical_and(v < self.high)
        return (-(self.high - self.low).log()).where(inside, float("-inf"))

    def entropy(self):
        return (self.high - self.low).log()

    @property
    def mean(self):
        return (self.low + self.high) * 0.5

    @property
    def variance(self):
        return (self.high - self.low).square() * (1.0 / 12)


class Bernoulli(Distribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Bernoulli")
        if logits is not None:
            self.logits = _t(logits)
            self.probs = self.logits.sigmoid()
        else:
            self.probs = _t(probs)
            p = self.probs.clamp(1.1920929e-07, 1 - 1.1920929e-07)  # torch's clamp_probs
            self.logits = p.log() - (-p).log1p()
        self.batch_shape = tuple(self.probs.shape)

    def _draw(self, shape):
        u = C.rand(shape + self.batch_shape, self.probs.device)
        return (u < self.probs).cast(self.probs.dtype)

    def log_prob(self, value):
        """-BCE with logits, in torch's stable form."""
        v = _t(value, self.logits)
        x = self.logits
        return -(x.clamp(0.0, None) - x * v + (-x.abs()).exp().log1p())

    def entropy(self):
        p = self.probs
        return -(p * self.log_prob(p.ones_like()) + (1.0 - p) * self.log_prob(p.zeros_like()))

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1.0 - self.probs)


class Categorical(Distribution):
    """Classes on the last dim of ``probs`` (normalised) or ``logits``."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits, "Categorical")
        if logits is not None:
            self.logits = _t(logits).log_softmax(-1)
            self.probs = self.logits.exp()
        else:
            p = _t(probs)
            self.probs = p / p.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(1.1920929e-07, 1 - 1.1920929e-07).log()
        self.batch_shape = tuple(self.probs.shape[:-1])
        self._num_events = self.probs.shape[-1]

    def _draw(self, shape):
        n = 1
        for d in shape:
            n *= d
        rows = self.probs.reshape((-1, self._num_events))
        draws = multinomial(rows, max(n, 1), True)  # [rows, n]
        return draws.transpose(0, 1).reshape(shape + self.batch_shape)

    def log_prob(self, value):
        v = value.cast("i32") if isinstance(value, Tensor) else C.tensor(value, dtype="i32")
        logits = self.logits
        if tuple(v.shape) != self.batch_shape:
            lead = tuple(v.shape)[: len(v.shape) - len(self.batch_shape)]
            logits = logits.expand(lead + tuple(logits.shape))
        return logits.gather(-1 % logits.ndim, v.unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        return -(self.probs * self.logits).sum(-1)

    @property
    def mean(self):
        raise ScellisError("Categorical has no mean (its classes are labels)")

    @property
    def param_shape(self):
        return tuple(self.probs.shape)


def kl_divergence(p, q):
    """KL(p || q) for two distributions of one family (Normal, Bernoulli, Categorical)."""
    if isinstance(p, Normal) and isinstance(q, Normal):
        var_ratio = (p.scale / q.scale).square()
        t1 = ((p.loc - q.loc) / q.scale).square()
        return (var_ratio + t1 - 1.0 - var_ratio.log()) * 0.5
    if isinstance(p, Categorical) and isinstance(q, Categorical):
        return (p.probs * (p.logits - q.logits)).sum(-1)
    if isinstance(p, Bernoulli) and isinstance(q, Bernoulli):
        one = p.probs.ones_like()
        return p.probs * (p.log_prob(one) - q.log_prob(one)) + (1.0 - p.probs) * (
            p.log_prob(one * 0.0) - q.log_prob(one * 0.0)
        )
    raise ScellisError(
        f"kl_divergence({type(p).__name__}, {type(q).__name__}) is not supported; "
        "Normal, Bernoulli and Categorical pairs of one family are"
    )


# torch's submodule paths (``torch.distributions.normal.Normal``) name the same classes
normal = uniform = bernoulli = categorical = kl = sys.modules[__name__]

__all__ = ["Distribution", "Normal", "Uniform", "Bernoulli", "Categorical", "kl_divergence"]
