"""Lion (catalog layer): the sign-momentum optimizer (Chen et al. 2023) as ``lion_update``.

``p *= 1 - lr wd``; ``p -= lr sign(b1 m + (1 - b1) g)``; ``m = b2 m + (1 - b2) g``.
torch has no Lion; this follows the authors' reference (and lion-pytorch) exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import field
from .adam import _betas, betas_field
from .base import Optimizer


@dataclass(frozen=True)
class LionConfig:
    """Lion: sign of an interpolated momentum, decoupled weight decay."""

    lr: float = field(
        1e-4,
        doc="learning rate (typically 3-10x smaller than AdamW's)",
        min=0.0,
        exclusive_min=True,
    )
    betas: tuple[float, float] = betas_field((0.9, 0.99), doc="interpolation and momentum decay")
    weight_decay: float = field(0.0, doc="decoupled decay: p *= 1 - lr * weight_decay", min=0.0)
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


class Lion(Optimizer):
    op = "lion_update"
    config = LionConfig

    def validate(self, cfg) -> None:
        _betas(cfg)

    def attrs(self, group: dict, step: int) -> dict:
        b1, b2 = group["betas"]
        return {
            "lr": group["lr"],
            "beta1": b1,
            "beta2": b2,
            "weight_decay": group["weight_decay"],
            "maximize": group["maximize"],
        }
