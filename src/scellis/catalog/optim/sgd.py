"""SGD (catalog layer): torch.optim.SGD's update as the fused ``sgd_update`` primitive.

With momentum ``mu`` and dampening ``d``: ``b = g`` on a parameter's first step, then
``b = mu b + (1 - d) g``; the step is ``b`` (or ``g + mu b`` with Nesterov) times lr.
Weight decay is L2 (added to the gradient), as in torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field
from .base import Optimizer


@dataclass(frozen=True)
class SGDConfig:
    """Stochastic gradient descent with optional (Nesterov) momentum, as torch.optim.SGD."""

    lr: float = field(1e-3, doc="learning rate", min=0.0, exclusive_min=True)
    momentum: float = field(0.0, doc="momentum factor", min=0.0)
    dampening: float = field(0.0, doc="dampening of the momentum", min=0.0, max=1.0)
    weight_decay: float = field(0.0, doc="L2 penalty, added to the gradient", min=0.0)
    nesterov: bool = field(False, doc="Nesterov momentum (needs momentum > 0, dampening 0)")
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


class SGD(Optimizer):
    op = "sgd_update"
    config = SGDConfig

    def validate(self, cfg) -> None:
        if cfg.nesterov and (cfg.momentum <= 0 or cfg.dampening != 0):
            raise ScellisError("Nesterov momentum requires a momentum and zero dampening")

    def attrs(self, group: dict, step: int) -> dict:
        return {
            "lr": group["lr"],
            "momentum": group["momentum"],
            "dampening": group["dampening"],
            "weight_decay": group["weight_decay"],
            "nesterov": group["nesterov"],
            "maximize": group["maximize"],
            "first": step == 1,
        }
