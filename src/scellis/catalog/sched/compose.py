"""Schedules made of schedules (catalog layer): torch's SequentialLR and ChainedScheduler.

A record names the parts as scheduler sections, ``schedulers: [{block_id, fields}, ...]``;
Python passes scheduler objects (``children``). Either way a part is asked for its rate
at a step and never stepped, so the composite stays a pure function of the step:

- ``sequential``: part ``i`` runs from ``milestones[i - 1]`` with its own step count
  restarted at 0 there (torch calls ``scheduler.step(0)`` at a milestone);
- ``chained``: every part's factor applies at once, ``lr = base * prod(lr_k / base)``,
  which is what torch's ChainedScheduler computes for its multiplicative schedules (each
  multiplies the current rate by its own ratio); the others are refused, since chaining
  them in torch depends on the order of float updates rather than on the step.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ...base.errors import ScellisError
from ..registry import field, lookup
from .base import Scheduler
from .plateau import ReduceOnPlateau


@dataclass(frozen=True)
class SequentialConfig:
    """One schedule after another, each switching on at a milestone (torch SequentialLR)."""

    schedulers: tuple[dict, ...] = field(
        doc="the schedules in order, each {block_id, fields}", default_factory=tuple
    )
    milestones: tuple[int, ...] = field(
        doc="the steps at which the next schedule starts: one fewer than schedulers",
        default_factory=tuple,
    )


@dataclass(frozen=True)
class ChainedConfig:
    """Several multiplicative schedules at once, their factors multiplied (torch
    ChainedScheduler)."""

    schedulers: tuple[dict, ...] = field(
        doc="the schedules, each {block_id, fields}", default_factory=tuple
    )


def milestones_problem(n_schedulers: int, milestones) -> str | None:
    """What is wrong with ``milestones`` for that many schedules, or None."""
    ms = list(milestones)
    if n_schedulers < 1:
        return "a sequential schedule needs at least one scheduler"
    if len(ms) != n_schedulers - 1:
        return f"{n_schedulers} schedulers need {n_schedulers - 1} milestones, got {len(ms)}"
    if any(not isinstance(m, int) or isinstance(m, bool) or m < 1 for m in ms) or ms != sorted(
        set(ms)
    ):
        return f"milestones must be increasing steps >= 1, got {ms}"
    return None


def _part(section, base_lrs: list[float]) -> Scheduler:
    if not isinstance(section, dict):
        raise ScellisError(f"each of schedulers is a {{block_id, fields}} mapping, got {section!r}")
    entry = lookup(section.get("block_id", ""), "scheduler")
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in section.items()}
    options.pop("block_id")
    try:
        cfg = entry.config(**options)
    except TypeError as e:
        raise ScellisError(f"{entry.id}: {e}") from None
    return entry.impl(None, config=cfg, base_lr=base_lrs)


class _Composite(Scheduler):
    def __init__(self, optimizer=None, config=None, base_lr=None, children=None, **options):
        self._given = list(children) if children is not None else None
        self._parts: list[Scheduler] | None = None
        super().__init__(optimizer, config, base_lr, **options)

    @property
    def parts(self) -> list[Scheduler]:
        if self._parts is None:
            if self._given is not None:
                self._parts = self._given
            else:
                self._parts = [_part(s, self.base_lrs) for s in self.cfg.schedulers]
            for p in self._parts:
                if isinstance(p, ReduceOnPlateau):
                    raise ScellisError(
                        f"{type(p).__name__} follows a metric, not the step: it cannot be a "
                        "part of a composite schedule"
                    )
            self.check_parts(self._parts)
        return self._parts

    def check_parts(self, parts: list[Scheduler]) -> None:
        """Checks a composite adds on its parts."""

    def load_state_dict(self, sd: dict) -> None:
        if self._given is None:
            self._parts = None  # rebuilt from the restored base rates
        super().load_state_dict(sd)


class Sequential(_Composite):
    config = SequentialConfig

    def validate(self, cfg) -> None:
        n = len(self._given) if self._given is not None else len(cfg.schedulers)
        if problem := milestones_problem(n, cfg.milestones):
            raise ScellisError(problem)

    def _at(self, step: int) -> tuple[Scheduler, int]:
        ms = list(self.cfg.milestones)
        i = bisect.bisect_right(ms, step)
        return self.parts[i], step - (ms[i - 1] if i else 0)

    def lrs_at(self, step: int) -> list[float]:
        part, local = self._at(step)
        return part.lrs_at(local)

    def momentum_at(self, step: int, group: int) -> float | None:
        part, local = self._at(step)
        return part.momentum_at(local, group)


class Chained(_Composite):
    config = ChainedConfig
    multiplicative_parts = True

    def validate(self, cfg) -> None:
        if not (self._given if self._given is not None else cfg.schedulers):
            raise ScellisError("a chained schedule needs at least one scheduler")

    def check_parts(self, parts: list[Scheduler]) -> None:
        for p in parts:
            if not p.multiplicative:
                raise ScellisError(
                    f"{type(p).__name__} is not a multiplicative schedule: chain constant, "
                    "step, multi_step, exponential, linear_warmup or polynomial (use a "
                    "sequential schedule to run others one after another)"
                )

    def lrs_at(self, step: int) -> list[float]:
        out = list(self.base_lrs)
        for p in self.parts:
            out = [lr * (mine / b) for lr, mine, b in zip(out, p.lrs_at(step), self.base_lrs)]
        return out
