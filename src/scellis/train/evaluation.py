"""The metrics of a validation pass (train layer): ``MetricSet``.

The loop computes the validation loss on the device and, when a metric needs them,
reads each batch's predictions and targets back for the host-side metrics of
``catalog.metrics``. ``to_units`` maps those values back to the data's own units
first (a forecaster trains on normalised values; its MAE is reported in the
series' units), so a metric means what the user's data means. It is called as
``to_units(rows, first)``, ``first`` being the index of the batch's first row in the
pass (validation reads its windows in order), since a window scaled by its own inputs
maps back by its own frame.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..base.dtypes import f16, f32
from ..base.errors import ScellisError
from ..catalog.metrics import make_metric
from ..runtime.tensor import Tensor
from .data import batch_rows, epoch_batches
from .step import to_compute, working_copies


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
        self._row = 0  # the pass' rows seen so far: the next batch's first window

    @property
    def needs_predictions(self) -> bool:
        return any(not m.from_loss for m in self.metrics)

    def reset(self) -> None:
        for m in self.metrics:
            m.reset()
        self._row = 0

    def update(self, pred: list, target: list) -> None:
        first, self._row = self._row, self._row + len(pred)
        if self.to_units is not None:
            pred, target = self.to_units(pred, first), self.to_units(target, first)
        for m in self.metrics:
            if not m.from_loss:
                m.update(pred, target)

    def results(self, val_loss: float) -> dict:
        return {m.name: (m.of_loss(val_loss) if m.from_loss else m.result())
                for m in self.metrics}  # fmt: skip


async def validation_pass(model, loss, data, *, seed: int = 0, compute=f32, metrics=None,
                          read=None, forward=None) -> tuple[float, dict | None]:  # fmt: skip
    """(mean loss, metrics) of ``model`` over ``data`` in eval mode, under the precision
    policy's working copies. ``read(tensor)`` awaits one readback (the loop counts
    them); the loss is summed on the device and read once, at the end. ``forward``
    runs the model's forward instead of calling it (the fast tier's fused forward)."""
    forward = forward or model
    read = read or (lambda t: t.read())
    model.eval()
    total, rows = None, 0
    if metrics is not None:
        metrics.reset()
    try:
        with no_grad(), working_copies(model, compute):
            for x, y in epoch_batches(data, 0, seed):
                pred = forward(to_compute(x, compute))
                if isinstance(pred, Tensor) and pred.dtype == f16:
                    pred = pred.cast("f32")
                n = batch_rows(x)
                part = loss(pred, y) * float(n)
                total, rows = (part if total is None else total + part), rows + n
                if metrics is not None and metrics.needs_predictions:
                    metrics.update(await read(pred), await read(y))
    finally:
        model.train()
    if total is None:
        raise ScellisError("the validation data produced no batches")
    value = (await read(total)) / rows
    return value, (metrics.results(value) if metrics is not None else None)
