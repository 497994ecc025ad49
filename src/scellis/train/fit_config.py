"""``FitConfig`` (train layer): the options of one ``fit`` call, typed and checked once.

The live objects a run trains (model, loss, optimizer, data, scheduler, train state)
stay arguments of the loop; everything that only says *how* to train is a field here.
``__post_init__`` is the one place the options are checked and put in their working
form (an ``EarlyStopping``, an ``Augment`` or None, the watched plateau metric), so the
loop reads attributes and never a string-keyed dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..base.errors import ScellisError
from .augment import Augment
from .stopping import EarlyStopping


@dataclass(frozen=True)
class FitConfig:
    """How to train: the fields ``fit`` takes as keywords, with their defaults."""

    # epochs over ``data``; the run also ends at ``max_steps`` (total steps) when given
    epochs: int
    # debug | prod | fast; required (resolve_tier says so when it is missing)
    determinism_tier: str | None = None
    # the seed of a fresh train state (its Philox streams); a given state keeps its own
    seed: int = 0
    # validation batches; without ``eval_every`` they are used at each epoch's end
    val_data: Any = None
    # validate every N steps (needs ``val_data``)
    eval_every: int | None = None
    # read the loss back (a ``log`` event) every N steps
    log_every: int = 10
    # a clipping spec for catalog.clip.clipper (a max norm, a mapping or None)
    grad_clip: Any = None
    # a precision policy name or spec for train.precision.resolve_precision
    precision: Any = None
    # an EarlyStopping or its fields as a mapping; kept as an EarlyStopping or None
    early_stopping: EarlyStopping | dict | None = None
    # what a ReduceOnPlateau scheduler is fed; default val_loss with val_data, else loss
    plateau_metric: str | None = None
    # skip a step whose gradients are not finite (always on with dynamic loss scaling)
    skip_nonfinite: bool = True
    max_steps: int | None = None
    # steps as a recorded dispatch schedule: None where the device can, True/False forced
    replay: bool | None = None
    # a train.evaluation.MetricSet computed at every validation pass
    metrics: Any = None
    # the validation passes' forward(x) (the fast tier's fused one), None: the model's
    forward: Callable | None = None
    # an Augment or the record's ``data.augment`` mapping; kept as an Augment or None
    augment: Augment | dict | None = None

    def __post_init__(self):
        if self.log_every < 1 or (self.eval_every is not None and self.eval_every < 1):
            raise ScellisError("log_every and eval_every must be >= 1")
        if self.eval_every is not None and self.val_data is None:
            raise ScellisError("eval_every needs val_data")
        early = EarlyStopping.of(self.early_stopping)
        if early is not None and early.metric.startswith("val_") and self.val_data is None:
            raise ScellisError(f"early stopping on {early.metric} needs val_data")
        plateau = self.plateau_metric or ("val_loss" if self.val_data is not None else "loss")
        # frozen: the normalised forms are set once, here, through object.__setattr__
        object.__setattr__(self, "early_stopping", early)
        object.__setattr__(self, "augment", Augment.of(self.augment))
        object.__setattr__(self, "plateau_metric", plateau)
