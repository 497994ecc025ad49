"""Step schedules (catalog layer): constant, step, exponential, cosine, linear and
warmup-cosine rates, each the torch.optim.lr_scheduler class it names, float for float.

``warmup_cosine`` (no single torch class) is, with ``W`` = warmup_steps, ``T`` =
total_steps, ``s`` = start_factor and ``b`` the base rate::

    t <  W:      b * (s + (1 - s) * t / W)
    W <= t <= T: min_lr + (b - min_lr) * (1 + cos(pi * (t - W) / (T - W))) / 2
    t >  T:      min_lr

torch's nearest is ``SequentialLR([LinearLR(s, 1, W), CosineAnnealingLR(T - W, min_lr)],
milestones=[W])``: the same curve, but computed recursively (rates differ from these
in the last bits), ``LinearLR`` refuses ``s = 0`` (warming up from 0 is allowed
here), and past ``T`` torch's cosine climbs back while this one stays at min_lr.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field
from .base import Scheduler


@dataclass(frozen=True)
class ConstantConfig:
    """A constant rate; ``factor`` < 1 scales it for the first ``total_iters`` steps
    (torch.optim.lr_scheduler.ConstantLR)."""

    factor: float = field(
        1.0, doc="multiplier until total_iters", min=0.0, max=1.0, exclusive_min=True
    )
    total_iters: int = field(0, doc="steps at the reduced rate", min=0)


class Constant(Scheduler):
    config = ConstantConfig
    multiplicative = True

    def lr_at(self, step, base_lr):
        f, n = self.cfg.factor, self.cfg.total_iters
        return self.fold(
            step, base_lr, lambda b: b * f, lambda lr, t: lr * (1.0 / f) if t == n else lr
        )


@dataclass(frozen=True)
class StepConfig:
    """Multiply the rate by gamma every step_size steps (torch StepLR)."""

    step_size: int = field(doc="steps between decays", min=1)
    gamma: float = field(0.1, doc="decay factor", min=0.0)


class Step(Scheduler):
    config = StepConfig
    multiplicative = True

    def lr_at(self, step, base_lr):
        s, g = self.cfg.step_size, self.cfg.gamma
        return self.fold(step, base_lr, lambda b: b, lambda lr, t: lr * g if t % s == 0 else lr)


@dataclass(frozen=True)
class ExponentialConfig:
    """Multiply the rate by gamma every step (torch ExponentialLR)."""

    gamma: float = field(doc="decay factor per step", min=0.0)


class Exponential(Scheduler):
    config = ExponentialConfig
    multiplicative = True

    def lr_at(self, step, base_lr):
        g = self.cfg.gamma
        return self.fold(step, base_lr, lambda b: b, lambda lr, t: lr * g)


@dataclass(frozen=True)
class CosineConfig:
    """Cosine annealing from the base rate to eta_min over t_max steps (torch
    CosineAnnealingLR, its closed form; past t_max the cosine continues, as torch's)."""

    t_max: int = field(doc="steps of a half cosine (torch's T_max)", min=1)
    eta_min: float = field(0.0, doc="the rate at t_max", min=0.0)


class Cosine(Scheduler):
    config = CosineConfig

    def lr_at(self, step, base_lr):
        lo = self.cfg.eta_min
        return lo + (base_lr - lo) * (1 + math.cos(math.pi * step / self.cfg.t_max)) / 2


@dataclass(frozen=True)
class LinearWarmupConfig:
    """Scale the rate linearly from start_factor to end_factor over total_iters steps
    (torch LinearLR)."""

    start_factor: float = field(
        1.0 / 3, doc="multiplier at step 0", min=0.0, max=1.0, exclusive_min=True
    )
    end_factor: float = field(1.0, doc="multiplier from total_iters on", min=0.0, max=1.0)
    total_iters: int = field(5, doc="steps of the ramp", min=0)


class LinearWarmup(Scheduler):
    config = LinearWarmupConfig
    multiplicative = True

    def lr_at(self, step, base_lr):
        s, e, n = self.cfg.start_factor, self.cfg.end_factor, self.cfg.total_iters

        def nxt(lr, t):
            if t > n:
                return lr
            return lr * (1.0 + (e - s) / (n * s + (t - 1) * (e - s)))

        return self.fold(step, base_lr, lambda b: b * s, nxt)


@dataclass(frozen=True)
class WarmupCosineConfig:
    """Linear warmup from start_factor * lr over warmup_steps, then a cosine to min_lr at
    total_steps (see the module doc for the formula and torch's SequentialLR twin)."""

    warmup_steps: int = field(doc="steps of the linear ramp", min=0)
    total_steps: int = field(doc="the step at which the rate reaches min_lr", min=1)
    start_factor: float = field(0.0, doc="multiplier at step 0", min=0.0, max=1.0)
    min_lr: float = field(0.0, doc="the final rate", min=0.0)


class WarmupCosine(Scheduler):
    config = WarmupCosineConfig

    def validate(self, cfg) -> None:
        if cfg.warmup_steps >= cfg.total_steps:
            raise ScellisError(
                f"warmup_steps ({cfg.warmup_steps}) must be below total_steps ({cfg.total_steps})"
            )

    def lr_at(self, step, base_lr):
        w, n, s, lo = (
            self.cfg.warmup_steps,
            self.cfg.total_steps,
            self.cfg.start_factor,
            self.cfg.min_lr,
        )
        if step < w:
            return base_lr * (s + (1 - s) * step / w)
        if step > n:
            return lo
        return lo + (base_lr - lo) * (1 + math.cos(math.pi * (step - w) / (n - w))) / 2
