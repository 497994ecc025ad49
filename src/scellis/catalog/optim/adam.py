"""Adam and AdamW (catalog layer): torch.optim.Adam/AdamW as fused ``adam(w)_update`` ops.

At step t: ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2`` (with AMSGrad the
running maximum of v is used), ``p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)``.
Adam's weight decay is L2 (added to g); AdamW's is decoupled (``p *= 1 - lr wd`` first).
The bias corrections are host scalars of the step, so changing lr recompiles nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field
from .base import Optimizer


def betas_field(default=(0.9, 0.999), doc="decay of the first and second moments"):
    """The ``betas`` of the Adam family: two decay rates, each in [0, 1) as torch asks."""
    return field(default, doc=doc, min=0.0, max=1.0, exclusive_max=True)


def _betas(cfg) -> None:
    """Two decays; the field's range bounds each of them (see ``check_config``)."""
    if len(cfg.betas) != 2:
        raise ScellisError(f"betas must be two numbers in [0, 1), got {tuple(cfg.betas)}")


@dataclass(frozen=True)
class AdamConfig:
    """Adam with L2 weight decay (torch.optim.Adam)."""

    lr: float = field(1e-3, doc="learning rate", min=0.0, exclusive_min=True)
    betas: tuple[float, float] = betas_field()
    eps: float = field(1e-8, doc="added to the denominator", min=0.0)
    weight_decay: float = field(0.0, doc="L2 penalty, added to the gradient", min=0.0)
    amsgrad: bool = field(False, doc="use the running maximum of the second moment")
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


@dataclass(frozen=True)
class AdamWConfig:
    """Adam with decoupled weight decay (torch.optim.AdamW)."""

    lr: float = field(1e-3, doc="learning rate", min=0.0, exclusive_min=True)
    betas: tuple[float, float] = betas_field()
    eps: float = field(1e-8, doc="added to the denominator", min=0.0)
    weight_decay: float = field(1e-2, doc="decoupled decay: p *= 1 - lr * weight_decay", min=0.0)
    amsgrad: bool = field(False, doc="use the running maximum of the second moment")
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


class Adam(Optimizer):
    op = "adam_update"
    config = AdamConfig

    def validate(self, cfg) -> None:
        _betas(cfg)

    def attrs(self, group: dict, step: int) -> dict:
        b1, b2 = group["betas"]
        return {
            "lr": group["lr"],
            "beta1": b1,
            "beta2": b2,
            "eps": group["eps"],
            "weight_decay": group["weight_decay"],
            "amsgrad": group["amsgrad"],
            "maximize": group["maximize"],
            "step": step,
        }


class AdamW(Adam):
    op = "adamw_update"
    config = AdamWConfig
