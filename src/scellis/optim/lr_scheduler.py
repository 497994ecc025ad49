"""torch.optim.lr_scheduler's constructors over the catalog schedulers (optim layer).

Rates are the catalog's, float for float torch's; call ``scheduler.step()`` after
``optimizer.step()``, as in torch. ``LambdaLR`` takes a Python function, so it has no
SML form; every other class here is a catalog scheduler with torch's arguments.
torch's ``last_epoch`` (resuming by hand) is not taken: restore a scheduler with
``load_state_dict``.
"""

from __future__ import annotations

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
