"""Loss modules (nn layer): torch's names over the catalog's ``training/loss/*``.

``MSELoss(reduction=...)`` and friends are the catalog losses themselves;
``CrossEntropyLoss`` takes torch's layout (classes on axis 1).
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog import losses as L
from . import functional as F

MSELoss = L.MSELoss
L1Loss = L.MAELoss
HuberLoss = L.HuberLoss
BCEWithLogitsLoss = L.BCEWithLogitsLoss


class CrossEntropyLoss(L.CrossEntropyLoss):
    """torch.nn.CrossEntropyLoss(weight=None, ignore_index=-100, reduction='mean',
    label_smoothing=0.0) with class indices as targets; ``weight`` (one per class) is
    kept beside the Config (a tensor has no SML form)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0, **options):  # fmt: skip
        if size_average is not None or reduce is not None:
            raise ScellisError("CrossEntropyLoss: size_average/reduce are gone; use reduction=")
        super().__init__(ignore_index=ignore_index, reduction=reduction,
                         label_smoothing=label_smoothing, **options)  # fmt: skip
        self.weight = weight

    def forward(self, logits, target):
        c = self.cfg
        return F.cross_entropy(
            logits,
            target,
            weight=self.weight,
            ignore_index=c.ignore_index,
            reduction=c.reduction,
            label_smoothing=c.label_smoothing,
        )


__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "L1Loss", "MSELoss"]
