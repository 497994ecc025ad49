"""The metrics of a validation pass (train layer): ``MetricSet``.

The loop computes the validation loss on the device and, when a metric needs them,
reads each batch's predictions and targets back for the host-side metrics of
``catalog.metrics``. ``to_units`` maps those values back to the data's own units
first (a forecaster trains on normalised values; its MAE is reported in the
series' units), so a metric means what the user's data means.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.metrics import make_metric


class MetricSet:
    """The record's ``eval.metrics`` as live metric objects (see the module note)."""

    def __init__(self, specs: list, *, task: str, to_units=None):
        self.metrics = [make_metric(s) for s in specs]
        for m in self.metrics:
            if m.task != task:
                raise ScellisError(
                    f"eval.metrics: {m.name} is a {m.task} metric; this record is {task}"
                )
        self.to_units = to_units

    @property
    def needs_predictions(self) -> bool:
        return any(not m.from_loss for m in self.metrics)

    def reset(self) -> None:
        for m in self.metrics:
            m.reset()

    def update(self, pred: list, target: list) -> None:
        if self.to_units is not None:
            pred, target = self.to_units(pred), self.to_units(target)
        for m in self.metrics:
            if not m.from_loss:
                m.update(pred, target)

    def results(self, val_loss: float) -> dict:
        return {m.name: (m.of_loss(val_loss) if m.from_loss else m.result())
                for m in self.metrics}  # fmt: skip
