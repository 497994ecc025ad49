"""Loss modules (nn layer): torch's names over the catalog's ``training/loss/*``.

``MSELoss(reduction=...)`` and friends are the catalog losses themselves;
``CrossEntropyLoss`` takes torch's layout (classes on axis 1).
"""

from __future__ import annotations

from ..catalog import losses as L
from . import functional as F

MSELoss = L.MSELoss
L1Loss = L.MAELoss
HuberLoss = L.HuberLoss
BCEWithLogitsLoss = L.BCEWithLogitsLoss


class CrossEntropyLoss(L.CrossEntropyLoss):
    """torch.nn.CrossEntropyLoss(ignore_index=-100, reduction='mean', label_smoothing=0.0)
    with class indices as targets."""

    def forward(self, logits, target):
        c = self.cfg
        return F.cross_entropy(
            logits,
            target,
            ignore_index=c.ignore_index,
            reduction=c.reduction,
            label_smoothing=c.label_smoothing,
        )


__all__ = ["BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "L1Loss", "MSELoss"]
