"""Normalisation and dropout blocks (catalog layer): layer norm, RMS norm, dropout.

Norms act over the last axis; their scale starts at ones and their shift at zeros
(torch's defaults). Dropout draws its mask from the Philox ``dropout`` stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ops.composites import layer_norm, mean
from ...runtime.functional import dropout
from ..registry import field, register
from .common import Block

# torch.finfo(dtype).eps: RMSNorm's eps when none is given
_EPS = {"f16": 2.0**-10, "f32": 2.0**-23, "f64": 2.0**-52}


@dataclass(frozen=True)
class LayerNormConfig:
    """Layer normalisation over the last axis: (x - mean) / sqrt(var + eps) * weight + bias."""

    normalized_shape: int = field(doc="size of the normalised (last) axis", min=1)
    eps: float = field(1e-5, doc="added to the variance", min=0)
    elementwise_affine: bool = field(True, doc="learned per-feature weight (and bias)")
    bias: bool = field(True, doc="learned shift (with elementwise_affine)")


class LayerNorm(Block):
    """torch.nn.LayerNorm over one trailing axis: ``weight`` ones, ``bias`` zeros."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: LayerNormConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        n, affine = cfg.normalized_shape, cfg.elementwise_affine
        self.weight = self.constant((n,), 1.0) if affine else None
        self.bias = self.constant((n,), 0.0) if affine and cfg.bias else None

    def forward(self, x):
        c = self.config
        return layer_norm(x, c.normalized_shape, self.weight, self.bias, c.eps)


@dataclass(frozen=True)
class RMSNormConfig:
    """RMS normalisation over the last axis: x / sqrt(mean(x^2) + eps) * weight."""

    normalized_shape: int = field(doc="size of the normalised (last) axis", min=1)
    eps: float | None = field(None, doc="added to the mean square; empty: the dtype's eps", min=0)
    elementwise_affine: bool = field(True, doc="learned per-feature weight")


class RMSNorm(Block):
    """torch.nn.RMSNorm over one trailing axis: ``weight`` ones."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: RMSNormConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        n = cfg.normalized_shape
        self.weight = self.constant((n,), 1.0) if cfg.elementwise_affine else None

    def forward(self, x):
        eps = self.config.eps
        if eps is None:
            eps = _EPS.get(x.dtype.name, _EPS["f32"])
        y = x * (mean(x * x, -1, keepdim=True) + eps).rsqrt()
        return y * self.weight if self.weight is not None else y


@dataclass(frozen=True)
class DropoutConfig:
    """Inverted dropout: zero each element with probability p in training, scale by 1/(1-p)."""

    p: float = field(0.5, doc="probability of zeroing an element, in [0, 1)", min=0, max=1)


class Dropout(Block):
    """Identity in eval mode; in training a Philox mask from the ``dropout`` stream."""

    incremental = True  # acts on each position alone (see blocks.decoding)

    def __init__(self, cfg: DropoutConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def forward(self, x):
        return dropout(x, self.config.p, self.training)


register("nn/layer_norm", "block", LayerNormConfig, LayerNorm, builtin=True)
register("nn/rms_norm", "block", RMSNormConfig, RMSNorm, builtin=True)
register("nn/dropout", "block", DropoutConfig, Dropout, builtin=True)
