"""RMSprop (catalog layer): torch.optim.RMSprop as the fused ``rmsprop_update`` primitive.

``s = alpha s + (1 - alpha) g^2``; centered keeps ``a = alpha a + (1 - alpha) g`` and
divides by ``sqrt(s - a^2) + eps`` instead of ``sqrt(s) + eps``; with momentum the
quotient feeds a buffer ``b = mu b + g / avg`` and the step is ``lr b``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import field
from .base import Optimizer


@dataclass(frozen=True)
class RMSpropConfig:
    """RMSprop (torch.optim.RMSprop)."""

    lr: float = field(1e-2, doc="learning rate", min=0.0, exclusive_min=True)
    alpha: float = field(
        0.99, doc="smoothing constant of the squared-gradient average", min=0.0, max=1.0
    )
    eps: float = field(1e-8, doc="added to the denominator", min=0.0)
    weight_decay: float = field(0.0, doc="L2 penalty, added to the gradient", min=0.0)
    momentum: float = field(0.0, doc="momentum factor", min=0.0)
    centered: bool = field(False, doc="normalise by the estimated variance of the gradient")
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


class RMSprop(Optimizer):
    op = "rmsprop_update"
    config = RMSpropConfig

    def attrs(self, group: dict, step: int) -> dict:
        keys = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize")
        return {k: group[k] for k in keys}
