"""The scheduler driver (catalog layer): a learning rate as a pure function of the step.

A schedule defines ``lr_at(step, base_lr)``; the driver keeps the step (torch's
``last_epoch``), writes ``group["lr"]`` of its optimizer at construction (step 0)
and after every ``step()``, and saves nothing but the step and the base rates, so
a resumed run recomputes the same rates. The optimizer passes lr to its kernel as a
scalar: changing it recompiles nothing.

Where torch updates a rate recursively (StepLR, ExponentialLR, LinearLR, ConstantLR
multiply the previous rate), ``fold`` replays that recursion so the floats are
torch's bit for bit; it keeps a cursor, so stepping forward costs O(1) per step.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

from ...base.errors import ScellisError
from ..registry import check_config


class Scheduler:
    """Base of every scheduler: ``Scheduler(optimizer, config=None, base_lr=None, **options)``.

    Without an optimizer, ``base_lr`` (a float or one per group) gives the rates and
    ``lr_at``/``get_last_lr`` are all there is.
    """

    config: type = type(None)
    # True where torch's update multiplies the current rate by a ratio of the step alone,
    # so the schedule composes with others as a factor (a ``chained`` part)
    multiplicative: bool = False
    # True where every part must be multiplicative (``chained``); SML validation asks
    # the registry for both flags, so a record's bad part is found at its line:col
    multiplicative_parts: bool = False

    def __init__(self, optimizer=None, config=None, base_lr=None, **options):
        if config is None:
            self.cfg = self.config(**options)
        else:
            self.cfg = dataclasses.replace(config, **options) if options else config
        check_config(self.cfg)
        self.validate(self.cfg)
        self.optimizer = optimizer
        self._cursor: dict[float, tuple[int, float]] = {}
        if optimizer is not None:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
            self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        elif base_lr is not None:
            self.base_lrs = list(base_lr) if isinstance(base_lr, (list, tuple)) else [base_lr]
        else:
            raise ScellisError("a scheduler needs an optimizer or a base_lr")
        self.last_epoch = 0
        self._apply(start=True)

    def validate(self, cfg) -> None:
        """Cross-field checks a subclass adds (ranges are checked from the Config)."""

    def lr_at(self, step: int, base_lr: float) -> float:
        raise NotImplementedError

    def momentum_at(self, step: int, group: int) -> float | None:
        """A momentum (or Adam's beta1) to set with the rate; None: leave it alone."""
        return None

    def lrs_at(self, step: int) -> list[float]:
        return [self.lr_at(step, b) for b in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one step (call after ``optimizer.step()``, as in torch). torch's older
        ``step(epoch)`` sets the step instead, and the rate is the schedule's at it
        (``CosineAnnealingWarmRestarts`` documents fractional epochs,
        ``step(epoch + i / iters)``)."""
        # tell the optimizer (a compiled step must not replay past a scheduler's step);
        # through the optimizer, so this class's text runs unchanged beside torch's
        told = getattr(self.optimizer, "rate_stepped", None)
        if told is not None:
            told(self)
        if epoch is None:
            self.last_epoch += 1
            self._apply()
            return
        self.last_epoch = epoch
        self.__dict__.pop("_own_lr", None)  # a rate set at an epoch, never composed
        self._apply()
        self.last_epoch = math.floor(epoch)  # torch keeps the whole epochs

    def get_last_lr(self) -> list[float]:
        """The groups' rates as this scheduler's last step left them (torch's): where
        schedulers compose, the rate found after this one's step, not its own."""
        return list(self._last_lr)

    def _apply(self, start: bool = False) -> None:
        before = self.__dict__.get("_own_lr")
        if start and self.multiplicative:
            # torch's step 0 of a multiplicative schedule scales the rate it finds: made
            # on an optimizer whose rate an earlier scheduler moved from ``initial_lr``,
            # it continues from that rate rather than going back to the base
            before = self.base_lrs
        own = self._own_lr = self.lrs_at(self.last_epoch)
        self._last_lr = list(own)
        if self.optimizer is None:
            return
        for k, (g, lr) in enumerate(zip(self.optimizer.param_groups, own)):
            g["lr"] = self._next_rate(g["lr"], lr, before[k] if before else None)
            m = self.momentum_at(self.last_epoch, k)
            if m is not None:
                if "betas" in g:
                    g["betas"] = (m, *tuple(g["betas"])[1:])
                else:
                    g["momentum"] = m
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _next_rate(self, current: float, mine: float, my_last: float | None) -> float:
        """The group's new rate. Alone, this schedule's own rate. When something else
        moved the rate since this schedule set it (a second scheduler on the same
        optimizer, a hand edit), a multiplicative schedule applies its own step's
        ratio to the rate found, as torch's chainable ``step()`` does, so two
        schedulers compose (ExponentialLR 0.9 with StepLR(2, 0.5): 0.9, 0.405...)."""
        if not self.multiplicative or my_last is None or current == my_last or my_last == 0:
            return mine
        return current * (mine / my_last)

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, sd: dict) -> None:
        self.last_epoch = int(sd["last_epoch"])
        self.base_lrs = list(sd["base_lrs"])
        self.__dict__.pop("_own_lr", None)  # a restored rate is set, never composed
        self._apply()

    # -- torch's recursive rates, replayed --
    def fold(
        self,
        step: int,
        base: float,
        init: Callable[[float], float],
        nxt: Callable[[float, int], float],
    ) -> float:
        """``init(base)`` at step 0, then ``lr = nxt(lr, t)`` for t = 1..step."""
        if step < 0:
            raise ScellisError(f"steps start at 0, got {step}")
        t, lr = self._cursor.get(base, (0, init(base)))
        if t > step:
            t, lr = 0, init(base)
        while t < step:
            t += 1
            lr = nxt(lr, t)
        self._cursor[base] = (t, lr)
        return lr
