"""One-cycle schedule (catalog layer): torch.optim.lr_scheduler.OneCycleLR, float for float.

Two phases (three with ``three_phase``): up from ``max_lr / div_factor`` to ``max_lr``
over ``pct_start`` of ``total_steps``, then down to ``initial / final_div_factor``;
cosine or linear anneal. With ``cycle_momentum`` the momentum (Adam's beta1) moves
the opposite way between ``max_momentum`` and ``base_momentum``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field
from .base import Scheduler


def _cos(start, end, pct):
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _linear(start, end, pct):
    return (end - start) * pct + start


@dataclass(frozen=True)
class OneCycleConfig:
    """The 1cycle policy (torch OneCycleLR); max_lr None takes the optimizer's lr."""

    total_steps: int = field(doc="steps in the cycle", min=1)
    max_lr: float | None = field(None, doc="peak rate; None: the optimizer's lr", min=0.0)
    pct_start: float = field(0.3, doc="fraction of the cycle spent rising", min=0.0, max=1.0)
    anneal_strategy: str = field("cos", doc="anneal shape", choices=("cos", "linear"))
    div_factor: float = field(
        25.0, doc="initial rate = max_lr / div_factor", min=0.0, exclusive_min=True
    )
    final_div_factor: float = field(
        1e4, doc="final rate = initial / final_div_factor", min=0.0, exclusive_min=True
    )
    three_phase: bool = field(False, doc="rise, fall back to the initial rate, then anneal")
    cycle_momentum: bool = field(True, doc="cycle momentum (or beta1) inversely to the rate")
    base_momentum: float = field(0.85, doc="momentum at the peak rate", min=0.0, max=1.0)
    max_momentum: float = field(0.95, doc="momentum at the low rates", min=0.0, max=1.0)


class OneCycle(Scheduler):
    config = OneCycleConfig

    def __init__(self, optimizer=None, config=None, base_lr=None, **options):
        if optimizer is not None:  # the peak comes from the config or the optimizer's lr
            for g in optimizer.param_groups:
                g.pop("initial_lr", None)
        super().__init__(optimizer, config, base_lr, **options)
        if self.cfg.max_lr is not None:
            self.base_lrs = [self.cfg.max_lr] * len(self.base_lrs)
            self._apply()

    def _phases(self):
        c = self.cfg
        n = c.total_steps
        if c.three_phase:
            return [
                (float(c.pct_start * n) - 1, "initial", "max", "max_m", "base_m"),
                (float(2 * c.pct_start * n) - 2, "max", "initial", "base_m", "max_m"),
                (n - 1, "initial", "min", "max_m", "max_m"),
            ]
        return [
            (float(c.pct_start * n) - 1, "initial", "max", "max_m", "base_m"),
            (n - 1, "max", "min", "base_m", "max_m"),
        ]

    def _at(self, step: int, max_lr: float) -> tuple[float, float]:
        c = self.cfg
        if step > c.total_steps:
            raise ScellisError(f"one_cycle stepped {step} times; total_steps is {c.total_steps}")
        initial = max_lr / c.div_factor
        vals = {
            "initial": initial,
            "max": max_lr,
            "min": initial / c.final_div_factor,
            "max_m": c.max_momentum,
            "base_m": c.base_momentum,
        }
        anneal = _cos if c.anneal_strategy == "cos" else _linear
        start = 0.0
        phases = self._phases()
        for i, (end, lr0, lr1, m0, m1) in enumerate(phases):
            if step <= end or i == len(phases) - 1:
                pct = (step - start) / (end - start)
                return anneal(vals[lr0], vals[lr1], pct), anneal(vals[m0], vals[m1], pct)
            start = end
        raise AssertionError("unreachable")

    def lr_at(self, step, base_lr):
        return self._at(step, base_lr)[0]

    def momentum_at(self, step, group):
        return self._at(step, self.base_lrs[group])[1] if self.cfg.cycle_momentum else None
