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


class BCEWithLogitsLoss(L.BCEWithLogitsLoss):
    """torch.nn.BCEWithLogitsLoss(weight=None, size_average=None, reduce=None,
    reduction='mean', pos_weight=None): ``weight`` scales each element (broadcast),
    ``pos_weight`` the positive term per class; both kept beside the Config."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):  # fmt: skip
        super().__init__(reduction=F.legacy_reduction(size_average, reduce, reduction))
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, logits, target):
        return F.binary_cross_entropy_with_logits(
            logits, target, self.weight, reduction=self.cfg.reduction, pos_weight=self.pos_weight
        )


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


from .losses_more import (  # noqa: E402, F401  (torch's other losses)
    BCELoss,
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    KLDivLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
