"""Losses (catalog layer): ``training/loss/*`` as Configs over the functional composites.

Each loss is called as ``loss(prediction, target)`` and returns a tensor (a scalar
unless ``reduction`` is ``none``); the maths is the composite's (ops.composites),
so its gradient follows from the primitives' VJPs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..base.dtypes import f32
from ..devices.kernel_choice import current as kernel_choice
from ..ops.xent import LOSS
from ..runtime import functional as F
from .module import Module
from .registry import check_config, field, register

REDUCTIONS = ("mean", "sum", "none")


def _reduction():
    return field("mean", doc="mean or sum over the elements, or none", choices=REDUCTIONS)


@dataclass(frozen=True)
class MSEConfig:
    """Mean squared error (torch MSELoss)."""

    reduction: str = _reduction()


@dataclass(frozen=True)
class MAEConfig:
    """Mean absolute error (torch L1Loss)."""

    reduction: str = _reduction()


@dataclass(frozen=True)
class HuberConfig:
    """Quadratic below delta, linear above (torch HuberLoss)."""

    delta: float = field(1.0, doc="where the loss turns linear", min=0.0, exclusive_min=True)
    reduction: str = _reduction()


@dataclass(frozen=True)
class CrossEntropyConfig:
    """Softmax cross-entropy over the last axis with integer targets (torch CrossEntropyLoss
    with class indices; the mean divides by the targets not ignored)."""

    label_smoothing: float = field(
        0.0, doc="mass spread uniformly over the classes", min=0.0, max=1.0
    )
    ignore_index: int = field(-100, doc="targets with this value count for nothing")
    reduction: str = _reduction()


@dataclass(frozen=True)
class BCEWithLogitsConfig:
    """Binary cross-entropy on logits, computed stably (torch BCEWithLogitsLoss)."""

    reduction: str = _reduction()


class Loss(Module):
    """A configured loss: ``Loss(config=None, **options)(prediction, target)``.

    A module, as torch's losses are: ``criterion.to(device)`` and ``criterion.cuda()``
    in a user's script work, and a loss kept on a model is one of its children."""

    config: type = type(None)

    def __init__(self, config=None, **options):
        super().__init__()
        if config is None:
            self.cfg = self.config(**options)
        else:
            self.cfg = dataclasses.replace(config, **options) if options else config
        check_config(self.cfg)

    def __getattr__(self, name: str):
        # torch keeps a loss's options as attributes (``criterion.reduction``)
        cfg = self.__dict__.get("cfg")
        if cfg is not None and name in {f.name for f in dataclasses.fields(cfg)}:
            return getattr(cfg, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __call__(self, pred, target):
        return self.forward(pred, target)

    def forward(self, pred, target):
        raise NotImplementedError


class MSELoss(Loss):
    config = MSEConfig

    def forward(self, pred, target):
        return F.mse_loss(pred, target, reduction=self.cfg.reduction)


class MAELoss(Loss):
    config = MAEConfig

    def forward(self, pred, target):
        return F.l1_loss(pred, target, reduction=self.cfg.reduction)


class HuberLoss(Loss):
    config = HuberConfig

    def forward(self, pred, target):
        return F.huber_loss(pred, target, delta=self.cfg.delta, reduction=self.cfg.reduction)


class CrossEntropyLoss(Loss):
    config = CrossEntropyConfig

    def forward(self, logits, target):
        c = self.cfg
        if _fused_xent(logits, target, c):
            return fused_cross_entropy(logits, target, c.label_smoothing, c.ignore_index)
        return F.cross_entropy(
            logits,
            target,
            label_smoothing=c.label_smoothing,
            ignore_index=c.ignore_index,
            reduction=c.reduction,
        )


def _fused_xent(logits, target, cfg) -> bool:
    """Where the step's kernel choice fuses training kernels (the ``fast`` tier), a mean
    cross-entropy of f32 logits is the fused primitive (ops/xent.py)."""
    return (
        kernel_choice().fuses("xent")
        and cfg.reduction == "mean"
        and logits.dtype == f32
        and not target.dtype.is_float
        and len(logits.shape) >= 2
    )


def fused_cross_entropy(logits, target, label_smoothing=0.0, ignore_index=-100):
    """The mean cross-entropy as one primitive over [rows, classes] (ops/xent.py)."""
    c = logits.shape[-1]
    x = logits.reshape(-1, c).contiguous()
    t = target.reshape(-1).contiguous()
    packed = x.prim("softmax_xent", t, label_smoothing=float(label_smoothing),
                    ignore_index=int(ignore_index))  # fmt: skip
    end = packed.shape[0]
    return packed[end - LOSS : end - LOSS + 1].reshape(())


class BCEWithLogitsLoss(Loss):
    config = BCEWithLogitsConfig

    def forward(self, logits, target):
        return F.binary_cross_entropy_with_logits(logits, target, reduction=self.cfg.reduction)


LOSSES = {
    "mse": MSELoss,
    "mae": MAELoss,
    "huber": HuberLoss,
    "cross_entropy": CrossEntropyLoss,
    "bce_with_logits": BCEWithLogitsLoss,
}
for _name, _impl in LOSSES.items():
    register(f"training/loss/{_name}", "loss", _impl.config, _impl, builtin=True)
