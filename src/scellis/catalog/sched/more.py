"""More step schedules (catalog layer): multi-step, polynomial decay and cosine with warm
restarts, each the torch.optim.lr_scheduler class it names, rate for rate (torch's
recursive updates are replayed, not approximated by a closed form)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field
from .base import Scheduler


@dataclass(frozen=True)
class MultiStepConfig:
    """Multiply the rate by gamma at each milestone step (torch MultiStepLR)."""

    milestones: tuple[int, ...] = field(doc="the steps at which the rate decays",
                                        default_factory=tuple)  # fmt: skip
    gamma: float = field(0.1, doc="decay factor at each milestone", min=0.0)


class MultiStep(Scheduler):
    config = MultiStepConfig
    multiplicative = True

    def validate(self, cfg) -> None:
        if not all(isinstance(m, int) and not isinstance(m, bool) and m >= 1
                   for m in cfg.milestones):  # fmt: skip
            raise ScellisError(f"milestones must be steps >= 1, got {list(cfg.milestones)}")

    def lr_at(self, step, base_lr):
        g, ms = self.cfg.gamma, list(self.cfg.milestones)
        return self.fold(step, base_lr, lambda b: b, lambda lr, t: lr * g ** ms.count(t))


@dataclass(frozen=True)
class PolynomialConfig:
    """Decay the rate to 0 over total_iters steps as (1 - t/total_iters)^power (torch
    PolynomialLR)."""

    total_iters: int = field(5, doc="steps of the decay", min=1)
    power: float = field(1.0, doc="the polynomial's power", min=0.0)


class Polynomial(Scheduler):
    config = PolynomialConfig
    multiplicative = True

    def lr_at(self, step, base_lr):
        n, p = self.cfg.total_iters, self.cfg.power

        def nxt(lr, t):
            if t > n:
                return lr
            return lr * ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** p

        return self.fold(step, base_lr, lambda b: b, nxt)


@dataclass(frozen=True)
class CosineRestartsConfig:
    """Cosine annealing restarted every t_0 steps, each period t_mult times the last
    (torch CosineAnnealingWarmRestarts)."""

    t_0: int = field(doc="steps of the first period", min=1)
    t_mult: int = field(1, doc="each period's length over the one before", min=1)
    eta_min: float = field(0.0, doc="the lowest rate", min=0.0)


class CosineRestarts(Scheduler):
    config = CosineRestartsConfig

    def lr_at(self, step, base_lr):
        t_cur, t_i = step, self.cfg.t_0
        while t_cur >= t_i:  # torch counts along: T_cur -= T_i, T_i *= T_mult
            t_cur, t_i = t_cur - t_i, t_i * self.cfg.t_mult
        lo = self.cfg.eta_min
        return lo + (base_lr - lo) * (1 + math.cos(math.pi * t_cur / t_i)) / 2
