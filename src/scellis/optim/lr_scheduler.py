"""torch.optim.lr_scheduler's constructors over the catalog schedulers (optim layer).

Rates are the catalog's, float for float torch's; call ``scheduler.step()`` after
``optimizer.step()``, as in torch. ``LambdaLR`` takes a Python function, so it has no
SML form; every other class here is a catalog scheduler with torch's arguments.
torch's ``last_epoch`` (resuming by hand) is not taken: restore a scheduler with
``load_state_dict``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..base.errors import ScellisError
from ..catalog import sched as S


def _fresh(last_epoch: int) -> None:
    if last_epoch != -1:
        raise ScellisError("last_epoch is not supported: restore with load_state_dict")


class StepLR(S.Step):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        _fresh(last_epoch)
        super().__init__(optimizer, step_size=int(step_size), gamma=float(gamma))


class ExponentialLR(S.Exponential):
    def __init__(self, optimizer, gamma, last_epoch=-1):
        _fresh(last_epoch)
        super().__init__(optimizer, gamma=float(gamma))


class CosineAnnealingLR(S.Cosine):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803
        _fresh(last_epoch)
        super().__init__(optimizer, t_max=int(T_max), eta_min=float(eta_min))


class LinearLR(S.LinearWarmup):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):  # fmt: skip
        _fresh(last_epoch)
        super().__init__(optimizer, start_factor=float(start_factor),
                         end_factor=float(end_factor), total_iters=int(total_iters))  # fmt: skip


class ConstantLR(S.Constant):
    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        _fresh(last_epoch)
        super().__init__(optimizer, factor=float(factor), total_iters=int(total_iters))


class MultiStepLR(S.MultiStep):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        _fresh(last_epoch)
        super().__init__(optimizer, milestones=tuple(sorted(int(m) for m in milestones)),
                         gamma=float(gamma))  # fmt: skip


class PolynomialLR(S.Polynomial):
    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        _fresh(last_epoch)
        super().__init__(optimizer, total_iters=int(total_iters), power=float(power))


class CosineAnnealingWarmRestarts(S.CosineRestarts):
    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):  # noqa: N803
        _fresh(last_epoch)
        super().__init__(optimizer, t_0=int(T_0), t_mult=int(T_mult), eta_min=float(eta_min))


class CyclicLR(S.Scheduler):
    """torch's CyclicLR: the rate climbs from ``base_lr`` to ``max_lr`` over
    ``step_size_up`` steps and back over ``step_size_down``, the height scaled per
    cycle (``triangular2``: halved) or per step (``exp_range``: ``gamma**t``); the
    momentum (or Adam's beta1) moves the other way when ``cycle_momentum``."""

    config = S.ConstantConfig  # no options of its own: Constant's defaults are inert

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch=-1):  # fmt: skip
        _fresh(last_epoch)
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ScellisError(
                f"CyclicLR: mode is triangular, triangular2 or exp_range, not {mode!r}"
            )
        n = len(optimizer.param_groups)
        self.max_lrs = _per_group(max_lr, n)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total, self.ratio = up + down, up / (up + down)
        self.mode, self.gamma, self.scale_fn = mode, float(gamma), scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else (
            "iterations" if mode == "exp_range" else "cycle")  # fmt: skip
        self.cycle_momentum = bool(cycle_momentum)
        if cycle_momentum and not all(
            "momentum" in g or "betas" in g for g in optimizer.param_groups
        ):
            raise ScellisError("CyclicLR: cycle_momentum needs an optimizer with momentum or betas")
        self.base_moms, self.max_moms = _per_group(base_momentum, n), _per_group(max_momentum, n)
        for g, lr in zip(optimizer.param_groups, _per_group(base_lr, n)):
            g["initial_lr"] = g["lr"] = lr
        super().__init__(optimizer)

    def _scale(self, step: int) -> tuple[float, float]:
        """(height fraction in the cycle, the mode's scale) at ``step``."""
        cycle = math.floor(1 + step / self.total)
        x = 1.0 + step / self.total - cycle
        frac = x / self.ratio if x <= self.ratio else (x - 1) / (self.ratio - 1)
        at = cycle if self.scale_mode == "cycle" else step
        if self.scale_fn is not None:
            return frac, self.scale_fn(at)
        if self.mode == "triangular2":
            return frac, 1 / (2.0 ** (at - 1))
        return frac, (self.gamma**at if self.mode == "exp_range" else 1.0)

    def lrs_at(self, step: int) -> list[float]:
        frac, scale = self._scale(step)
        return [b + (m - b) * frac * scale for b, m in zip(self.base_lrs, self.max_lrs)]

    def momentum_at(self, step: int, group: int) -> float | None:
        if not self.cycle_momentum:
            return None
        frac, scale = self._scale(step)
        hi, lo = self.max_moms[group], self.base_moms[group]
        return hi - (hi - lo) * frac * scale


def _per_group(value, n: int) -> list[float]:
    vals = [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)] * n
    if len(vals) != n:
        raise ScellisError(f"{len(vals)} values for {n} param groups")
    return vals


class OneCycleLR(S.OneCycle):
    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):  # fmt: skip
        _fresh(last_epoch)
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ScellisError("OneCycleLR needs total_steps, or epochs and steps_per_epoch")
            total_steps = int(epochs) * int(steps_per_epoch)
        peaks = list(max_lr) if isinstance(max_lr, (list, tuple)) else None
        super().__init__(
            optimizer, total_steps=int(total_steps), max_lr=None if peaks else float(max_lr),
            pct_start=pct_start, anneal_strategy=anneal_strategy,
            cycle_momentum=cycle_momentum, base_momentum=base_momentum,
            max_momentum=max_momentum, div_factor=float(div_factor),
            final_div_factor=float(final_div_factor), three_phase=three_phase,
        )  # fmt: skip
        if peaks:  # one peak per param group
            self.base_lrs = [float(p) for p in peaks]
            self._apply()


class ReduceLROnPlateau(S.ReduceOnPlateau):
    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8):  # fmt: skip
        if isinstance(min_lr, (list, tuple)):
            raise ScellisError("ReduceLROnPlateau: one min_lr for every group here")
        super().__init__(optimizer, mode=mode, factor=float(factor), patience=int(patience),
                         threshold=float(threshold), threshold_mode=threshold_mode,
                         cooldown=int(cooldown), min_lr=float(min_lr), eps=float(eps))  # fmt: skip


class LRScheduler(S.Scheduler):
    """torch's base for a scheduler of one's own: subclass it and define ``get_lr()``,
    which reads ``self.last_epoch``, ``self.base_lrs`` and the groups' current rates."""

    config = S.ConstantConfig  # no options of its own: Constant's defaults are inert

    def __init__(self, optimizer, last_epoch=-1):
        _fresh(last_epoch)
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        raise NotImplementedError("a scheduler subclass defines get_lr()")

    def lrs_at(self, step: int) -> list[float]:
        return [float(v) for v in self.get_lr()]


_LRScheduler = LRScheduler  # torch's older name


class LambdaLR(S.Scheduler):
    """torch's LambdaLR: the rate at step t is ``base_lr * lr_lambda(t)`` (one function,
    or one per param group)."""

    config = S.ConstantConfig  # no options of its own: Constant's defaults are inert

    def __init__(self, optimizer, lr_lambda: Callable | list, last_epoch=-1):
        _fresh(last_epoch)
        n = len(optimizer.param_groups)
        fns = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(fns) != n:
            raise ScellisError(f"LambdaLR: {len(fns)} functions for {n} param groups")
        self.lr_lambdas = fns
        super().__init__(optimizer)

    def lrs_at(self, step: int) -> list[float]:
        return [b * f(step) for b, f in zip(self.base_lrs, self.lr_lambdas)]


class MultiplicativeLR(LambdaLR):
    """torch's MultiplicativeLR: each step multiplies the rate by ``lr_lambda(t)``."""

    def lrs_at(self, step: int) -> list[float]:
        out = []
        for b, f in zip(self.base_lrs, self.lr_lambdas):
            lr = b
            for t in range(1, step + 1):
                lr *= f(t)
            out.append(lr)
        return out


def _one_optimizer(schedulers, optimizer):
    parts = list(schedulers)
    if not parts:
        raise ScellisError("give at least one scheduler")
    optimizer = optimizer if optimizer is not None else parts[0].optimizer
    if any(p.optimizer is not optimizer for p in parts):
        raise ScellisError("every scheduler must belong to the same optimizer")
    return parts, optimizer


class SequentialLR(S.Sequential):
    """torch's SequentialLR: ``schedulers[i]`` runs from ``milestones[i - 1]``, its steps
    counted from 0 there."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        _fresh(last_epoch)
        parts, optimizer = _one_optimizer(schedulers, optimizer)
        super().__init__(optimizer, milestones=tuple(milestones), children=parts)


class ChainedScheduler(S.Chained):
    """torch's ChainedScheduler: every scheduler's factor at each step."""

    def __init__(self, schedulers, optimizer=None):
        parts, optimizer = _one_optimizer(schedulers, optimizer)
        super().__init__(optimizer, children=parts)
