"""Early stopping (train layer): stop when a monitored metric stops improving.

A value improves on the best when it is lower by more than ``min_delta`` (``mode``
min) or higher by more than ``min_delta`` (max); after ``patience`` values in a row
without an improvement the run stops. The counters are plain data in the train state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..base.errors import ScellisError


@dataclass(frozen=True)
class EarlyStopping:
    patience: int = 5
    min_delta: float = 0.0
    mode: str = "min"
    # val_loss or val_<metric> (an eval.metrics entry): at validation passes; loss: the
    # training loss at log points
    metric: str = "val_loss"

    def __post_init__(self):
        if self.patience < 0 or self.min_delta < 0:
            raise ScellisError("early stopping needs patience >= 0 and min_delta >= 0")
        if self.mode not in ("min", "max"):
            raise ScellisError(f"early stopping mode must be min or max, got {self.mode!r}")
        if not isinstance(self.metric, str) or not (
            self.metric == "loss" or self.metric.startswith("val_")
        ):
            raise ScellisError(
                f"early stopping watches loss, val_loss or val_<metric>, got {self.metric!r}"
            )

    @classmethod
    def of(cls, spec) -> EarlyStopping | None:
        if spec is None or isinstance(spec, EarlyStopping):
            return spec
        try:
            return cls(**dict(spec))
        except TypeError as e:
            raise ScellisError(f"early_stopping: {e}") from None

    def feed(self, value: float, counters: dict) -> bool:
        """Record one value in ``counters`` (best, bad); True when the run should stop."""
        best = counters.get("best")
        if best is None:
            best = math.inf if self.mode == "min" else -math.inf
        better = (
            value < best - self.min_delta if self.mode == "min" else value > best + self.min_delta
        )
        if better:
            counters["best"], counters["bad"] = value, 0
        else:
            counters["bad"] = counters.get("bad", 0) + 1
        counters["stopped"] = not better and counters["bad"] >= self.patience
        return counters["stopped"]
