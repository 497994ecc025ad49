"""torch.optim.swa_utils (optim layer): weight averaging for SWA and EMA.

``AveragedModel(model)`` keeps a copy of the model whose parameters are the running
average of the model's (``update_parameters``), or another average through
``avg_fn``/``multi_avg_fn`` (``get_ema_multi_avg_fn(decay)`` for an EMA); ``SWALR``
anneals every group's rate to ``swa_lr``; ``update_bn`` recomputes batch-norm running
statistics for the averaged weights as an equal-weight average over one pass of a
loader, as torch's does.
"""

from __future__ import annotations

import copy
import dataclasses
import math

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..catalog.module import Module
from .lr_scheduler import LRScheduler


def get_ema_multi_avg_fn(decay=0.999):
    def ema(averaged, current, num_averaged):
        for a, c in zip(averaged, current):
            a.copy_(a * decay + c * (1 - decay))

    return ema


def get_ema_avg_fn(decay=0.999):
    return lambda averaged, current, num_averaged: averaged * decay + current * (1 - decay)


class AveragedModel(Module):
    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module.to(device)
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers
        self.n_averaged = 0

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model) -> list:
        params = list(model.parameters())
        return params + list(model.buffers()) if self.use_buffers else params

    def update_parameters(self, model) -> None:
        mine, theirs = self._tensors(self.module), self._tensors(model)
        n = self.n_averaged
        with no_grad():
            if n == 0:
                for a, c in zip(mine, theirs):
                    a.copy_(c.detach())
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(mine, [c.detach() for c in theirs], n)
            else:
                for a, c in zip(mine, theirs):
                    if self.avg_fn is not None:
                        a.copy_(self.avg_fn(a.detach(), c.detach(), n))
                    else:
                        a.copy_(a + (c.detach() - a) / (n + 1))
        if not self.use_buffers:  # buffers follow the model, as in torch
            for a, c in zip(self.module.buffers(), model.buffers()):
                with no_grad():
                    a.copy_(c.detach())
        self.n_averaged = n + 1


class SWALR(LRScheduler):
    """Anneal each group's rate from its current value to ``swa_lr`` over
    ``anneal_epochs`` steps (cosine or linear), then hold it (torch's recursion)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):  # fmt: skip
        if anneal_strategy not in ("cos", "linear"):
            raise ScellisError(f"anneal_strategy is 'cos' or 'linear', not {anneal_strategy!r}")
        lrs = (
            swa_lr if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(optimizer.param_groups)
        )
        for g, lr in zip(optimizer.param_groups, lrs):
            g["swa_lr"] = float(lr)
        self.anneal_epochs, self.strategy = int(anneal_epochs), anneal_strategy
        super().__init__(optimizer, last_epoch)

    def _alpha(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self.strategy == "cos" else t

    def get_lr(self) -> list[float]:
        step = self.last_epoch if self.anneal_epochs else max(1, self.last_epoch)
        span = max(1, self.anneal_epochs)
        prev_alpha = self._alpha(max(0.0, min(1.0, (step - 1) / span)))
        alpha = self._alpha(max(0.0, min(1.0, step / span)))
        out = []
        for g in self.optimizer.param_groups:
            swa, lr = g["swa_lr"], g["lr"]
            start = swa if prev_alpha == 1 else (lr - prev_alpha * swa) / (1 - prev_alpha)
            out.append(swa * alpha + start * (1 - alpha))
        return out


def _batch_norms(model) -> list:
    return [m for m in model.modules() if hasattr(m, "running_mean") and hasattr(m, "config")
            and hasattr(m.config, "momentum")]  # fmt: skip


def update_bn(loader, model, device=None) -> None:
    """One pass of ``loader`` through ``model`` in training mode; each batch-norm layer's
    running statistics become the equal-weight average of the batches' (momentum 1/k
    at batch k, which is torch's cumulative average)."""
    norms = _batch_norms(model)
    if not norms:
        return
    configs = [m.config for m in norms]
    was_training = model.training
    with no_grad():
        for m in norms:
            m.running_mean.zero_()
            m.running_var.fill_(1.0)
    model.train()
    try:
        for k, batch in enumerate(loader, start=1):
            x = batch[0] if isinstance(batch, (list, tuple)) else batch
            if device is not None:
                x = x.to(device)
            for m, c in zip(norms, configs):
                object.__setattr__(m, "config", dataclasses.replace(c, momentum=1.0 / k))
            model(x)
    finally:
        for m, c in zip(norms, configs):
            object.__setattr__(m, "config", c)
        model.train(was_training)
