"""Reduce-on-plateau (catalog layer): torch.optim.lr_scheduler.ReduceLROnPlateau.

The rate is a function of the metric history: ``step(metric)`` feeds one value;
after more than ``patience`` values without an improvement (beyond ``threshold``,
relative or absolute) the rate is multiplied by ``factor`` (never below ``min_lr``,
and only by more than ``eps``), then ``cooldown`` values are ignored.
``plateau_lrs`` replays a whole history as a pure function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field
from .base import Scheduler


@dataclass(frozen=True)
class ReduceOnPlateauConfig:
    """Reduce the rate when a metric stops improving (torch ReduceLROnPlateau)."""

    mode: str = field("min", doc="min: lower is better; max: higher is", choices=("min", "max"))
    factor: float = field(0.1, doc="new rate = rate * factor", min=0.0, max=1.0)
    patience: int = field(10, doc="bad steps tolerated before a reduction", min=0)
    threshold: float = field(1e-4, doc="least change that counts as an improvement", min=0.0)
    threshold_mode: str = field(
        "rel", doc="threshold relative to the best, or absolute", choices=("rel", "abs")
    )
    cooldown: int = field(0, doc="steps ignored after a reduction", min=0)
    min_lr: float = field(0.0, doc="lower bound of the rate", min=0.0)
    eps: float = field(1e-8, doc="reductions smaller than this are skipped", min=0.0)


class ReduceOnPlateau(Scheduler):
    config = ReduceOnPlateauConfig

    def __init__(self, optimizer=None, config=None, base_lr=None, **options):
        super().__init__(optimizer, config, base_lr, **options)
        self.lrs = list(self._last_lr)
        self.best = math.inf if self.cfg.mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0

    def validate(self, cfg) -> None:
        if cfg.factor >= 1.0:
            raise ScellisError("reduce_on_plateau factor must be < 1")

    def lr_at(self, step, base_lr):
        return base_lr  # before any metric; afterwards the rate is state, see step()

    def _better(self, a: float, best: float) -> bool:
        c = self.cfg
        if c.mode == "min":
            return (
                a < best * (1.0 - c.threshold)
                if c.threshold_mode == "rel"
                else (a < best - c.threshold)
            )
        return (
            a > best * (c.threshold + 1.0)
            if c.threshold_mode == "rel"
            else (a > best + c.threshold)
        )

    def step(self, metric=None) -> None:  # type: ignore[override]
        """Feed one metric value (a float; a tensor is read back)."""
        if metric is None:
            raise TypeError("reduce_on_plateau.step() needs the metric")
        current = float(metric)
        self.last_epoch += 1
        if self._better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.cfg.patience:
            self._reduce()
            self.cooldown_counter = self.cfg.cooldown
            self.num_bad_epochs = 0
        self._last_lr = list(self.lrs)

    def _reduce(self) -> None:
        groups = self.optimizer.param_groups if self.optimizer is not None else None
        for i in range(len(self.lrs)):
            old = float(groups[i]["lr"]) if groups is not None else self.lrs[i]
            new = max(old * self.cfg.factor, self.cfg.min_lr)
            if old - new > self.cfg.eps:
                self.lrs[i] = new
                if groups is not None:
                    groups[i]["lr"] = new

    def state_dict(self) -> dict:
        return {
            **super().state_dict(),
            "lrs": list(self.lrs),
            "best": self.best,
            "num_bad_epochs": self.num_bad_epochs,
            "cooldown_counter": self.cooldown_counter,
        }

    def load_state_dict(self, sd: dict) -> None:
        self.last_epoch, self.base_lrs = int(sd["last_epoch"]), list(sd["base_lrs"])
        self.lrs, self.best = list(sd["lrs"]), float(sd["best"])
        self.num_bad_epochs, self.cooldown_counter = sd["num_bad_epochs"], sd["cooldown_counter"]
        self._last_lr = list(self.lrs)
        if self.optimizer is not None:
            for g, lr in zip(self.optimizer.param_groups, self.lrs):
                g["lr"] = lr


def plateau_lrs(metrics, base_lr: float, config=None, **options) -> list[float]:
    """The rate after each metric of ``metrics``, from ``base_lr`` (a pure function)."""
    s = ReduceOnPlateau(None, config, base_lr=base_lr, **options)
    out = []
    for m in metrics:
        s.step(m)
        out.append(s.get_last_lr()[0])
    return out
