"""Normalisation and dropout blocks (catalog layer): layer, RMS and batch norm, dropout.

Norms act over the last axis (batch norm: per channel of the last axis, over all the
others); their scale starts at ones and their shift at zeros (torch's defaults).
Dropout draws its mask from the Philox ``dropout`` stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...autograd import no_grad
from ...base.errors import ShapeError
from ...ops.composites import layer_norm, mean, rms_norm
from ...runtime.creation import full
from ...runtime.functional import dropout
from ...runtime.inplace import write_into
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
        return rms_norm(x, self.weight, eps)


@dataclass(frozen=True)
class BatchNorm1dConfig:
    """Batch normalisation per channel (the last axis) of [B, C] or [B, T, C].

    torch's BatchNorm1d with channels last: training normalises with the batch's
    statistics and updates the running ones; eval normalises with the running ones."""

    num_features: int = field(doc="channels (C, the input's last axis)", min=1)
    eps: float = field(1e-5, doc="added to the variance", min=0)
    momentum: float = field(
        0.1, doc="weight of the batch in the running statistics' update", min=0, max=1
    )
    affine: bool = field(True, doc="learned per-channel weight and bias")
    track_running_stats: bool = field(
        True, doc="keep running mean and variance (buffers, saved in checkpoints) for eval"
    )


class BatchNorm1d(Block):
    """``weight`` ones, ``bias`` zeros; buffers ``running_mean`` (zeros) and ``running_var``
    (ones). Running statistics follow torch: ``r = (1 - momentum) r + momentum s``, the
    variance unbiased (n / (n - 1)) there and biased in the normalisation."""

    def __init__(self, cfg: BatchNorm1dConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        n, c = cfg.num_features, self.ctx
        self.weight = self.constant((n,), 1.0) if cfg.affine else None
        self.bias = self.constant((n,), 0.0) if cfg.affine else None
        if cfg.track_running_stats:
            self.register_buffer("running_mean", full((n,), 0.0, c["dtype"], c["device"]))
            self.register_buffer("running_var", full((n,), 1.0, c["dtype"], c["device"]))

    def translate_state(self, state: dict) -> dict:
        # torch's step counter only matters for momentum=None, which is not offered
        return {k: v for k, v in state.items() if k != "num_batches_tracked"}

    def forward(self, x):
        c = self.config
        if x.ndim not in (2, 3) or x.shape[-1] != c.num_features:
            raise ShapeError(f"BatchNorm1d takes [B, {c.num_features}] or [B, T, "
                             f"{c.num_features}], got {x.shape}")  # fmt: skip
        axes = tuple(range(x.ndim - 1))
        if self.training or not c.track_running_stats:
            mu = mean(x, axes)
            d = x - mu
            v = mean(d * d, axes)
            if self.training and c.track_running_stats:
                self._update(mu, v, x.numel // c.num_features)
        else:
            mu, v = self.running_mean, self.running_var
            d = x - mu
        y = d * (v + c.eps).rsqrt()
        if self.weight is not None:
            y = y * self.weight + self.bias
        return y

    def _update(self, mu, v, n: int) -> None:
        m = self.config.momentum
        with no_grad():
            unbiased = v.detach() * (n / (n - 1) if n > 1 else 1.0)
            new_mean = self.running_mean * (1.0 - m) + mu.detach() * m
            new_var = self.running_var * (1.0 - m) + unbiased * m
            write_into(self.running_mean, new_mean)
            write_into(self.running_var, new_var)


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
register("nn/batch_norm1d", "block", BatchNorm1dConfig, BatchNorm1d, builtin=True)
register("nn/dropout", "block", DropoutConfig, Dropout, builtin=True)
