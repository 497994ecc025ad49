"""Adagrad, NAdam and RAdam (catalog layer): torch.optim's, as fused ``<name>_update`` ops.

Their update formulas and host scalars are in ``ops.optim_adaptive``. Every term that
changes per step (Adagrad's decayed lr, NAdam's momentum schedule, RAdam's rectification
switch) is a host scalar of the step, so neither a scheduler nor the step count
recompiles anything; the state buffers (``sum``; ``exp_avg``/``exp_avg_sq``) are flat
like Adam's and a checkpoint carries them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..registry import field
from .adam import _betas, betas_field
from .base import Optimizer


@dataclass(frozen=True)
class AdagradConfig:
    """Adagrad (torch.optim.Adagrad)."""

    lr: float = field(1e-2, doc="learning rate", min=0.0, exclusive_min=True)
    lr_decay: float = field(0.0, doc="the rate at step t is lr / (1 + (t - 1) lr_decay)", min=0.0)
    weight_decay: float = field(0.0, doc="L2 penalty, added to the gradient", min=0.0)
    initial_accumulator_value: float = field(
        0.0, doc="starting value of the sum of squared gradients", min=0.0
    )
    eps: float = field(1e-10, doc="added to the denominator", min=0.0)
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


@dataclass(frozen=True)
class NAdamConfig:
    """Adam with Nesterov momentum (torch.optim.NAdam)."""

    lr: float = field(2e-3, doc="learning rate", min=0.0, exclusive_min=True)
    betas: tuple[float, float] = betas_field()
    eps: float = field(1e-8, doc="added to the denominator", min=0.0)
    weight_decay: float = field(0.0, doc="L2 penalty (or decoupled decay, see below)", min=0.0)
    momentum_decay: float = field(4e-3, doc="psi of the momentum schedule", min=0.0)
    decoupled_weight_decay: bool = field(False, doc="decay as AdamW does: p *= 1 - lr wd")
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


@dataclass(frozen=True)
class RAdamConfig:
    """Rectified Adam (torch.optim.RAdam): momentum SGD while the variance estimate is short."""

    lr: float = field(1e-3, doc="learning rate", min=0.0, exclusive_min=True)
    betas: tuple[float, float] = betas_field()
    eps: float = field(1e-8, doc="added to the denominator", min=0.0)
    weight_decay: float = field(0.0, doc="L2 penalty (or decoupled decay, see below)", min=0.0)
    decoupled_weight_decay: bool = field(False, doc="decay as AdamW does: p *= 1 - lr wd")
    maximize: bool = field(False, doc="maximize the objective instead of minimizing it")


class Adagrad(Optimizer):
    op = "adagrad_update"
    config = AdagradConfig

    def attrs(self, group: dict, step: int) -> dict:
        keys = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "maximize")
        return {**{k: group[k] for k in keys}, "step": step}


class _AdamFamily(Optimizer):
    def validate(self, cfg) -> None:
        _betas(cfg)

    def attrs(self, group: dict, step: int) -> dict:
        b1, b2 = group["betas"]
        keys = ("lr", "eps", "weight_decay", "decoupled_weight_decay", "maximize")
        return {**{k: group[k] for k in keys}, "beta1": b1, "beta2": b2, "step": step}


class NAdam(_AdamFamily):
    op = "nadam_update"
    config = NAdamConfig

    def attrs(self, group: dict, step: int) -> dict:
        return {**super().attrs(group, step), "momentum_decay": group["momentum_decay"]}


class RAdam(_AdamFamily):
    op = "radam_update"
    config = RAdamConfig
