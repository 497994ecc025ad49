"""torch.nn's loss modules over ``nn.functional``'s losses (nn layer): torch's
constructor arguments, in torch's order; a class ``weight`` (and ``pos_weight``) is a
buffer, as torch registers it."""

from __future__ import annotations

from ..catalog.module import Module
from . import _losses as LF


class _Loss(Module):
    """``fn(*inputs, **options)``; the legacy size_average/reduce become ``reduction``."""

    fn = staticmethod(LF.l1_loss)

    def __init__(self, size_average=None, reduce=None, reduction="mean", **options):
        super().__init__()
        options["reduction"] = LF.legacy_reduction(size_average, reduce, reduction)
        object.__setattr__(self, "options", options)

    @property
    def reduction(self) -> str:
        return self.options["reduction"]

    def forward(self, *inputs):
        return type(self).fn(*inputs, **self.options)


class _Weighted(_Loss):
    """A loss with a per-class ``weight`` buffer, passed to ``fn`` by keyword."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", **options):
        super().__init__(size_average, reduce, reduction, **options)
        self.register_buffer("weight", weight)

    def forward(self, *inputs):
        return type(self).fn(*inputs, weight=self.weight, **self.options)


class BCELoss(_Weighted):
    fn = staticmethod(LF.binary_cross_entropy)


class NLLLoss(_Weighted):
    """torch.nn.NLLLoss(weight=None, size_average=None, ignore_index=-100, reduce=None,
    reduction='mean')."""

    fn = staticmethod(LF.nll_loss)

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction, ignore_index=int(ignore_index))


class MultiLabelSoftMarginLoss(_Weighted):
    fn = staticmethod(LF.multilabel_soft_margin_loss)


class SmoothL1Loss(_Loss):
    fn = staticmethod(LF.smooth_l1_loss)

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction, beta=float(beta))


class KLDivLoss(_Loss):
    """torch.nn.KLDivLoss(size_average=None, reduce=None, reduction='mean',
    log_target=False): the input is log-probabilities."""

    fn = staticmethod(LF.kl_div)

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction, log_target=bool(log_target))


class SoftMarginLoss(_Loss):
    fn = staticmethod(LF.soft_margin_loss)


class _Margin(_Loss):
    default_margin = 0.0

    def __init__(self, margin=None, size_average=None, reduce=None, reduction="mean"):
        m = self.default_margin if margin is None else float(margin)
        super().__init__(size_average, reduce, reduction, margin=m)


class MarginRankingLoss(_Margin):
    fn = staticmethod(LF.margin_ranking_loss)


class CosineEmbeddingLoss(_Margin):
    fn = staticmethod(LF.cosine_embedding_loss)


class HingeEmbeddingLoss(_Margin):
    fn = staticmethod(LF.hinge_embedding_loss)
    default_margin = 1.0


class TripletMarginLoss(_Loss):
    """torch.nn.TripletMarginLoss(margin=1.0, p=2.0, eps=1e-6, swap=False, ...)."""

    fn = staticmethod(LF.triplet_margin_loss)

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):  # fmt: skip
        super().__init__(size_average, reduce, reduction, margin=float(margin), p=float(p),
                         eps=float(eps), swap=bool(swap))  # fmt: skip


class PoissonNLLLoss(_Loss):
    """torch.nn.PoissonNLLLoss(log_input=True, full=False, size_average=None, eps=1e-8,
    reduce=None, reduction='mean')."""

    fn = staticmethod(LF.poisson_nll_loss)

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):  # fmt: skip
        super().__init__(size_average, reduce, reduction, log_input=bool(log_input),
                         full=bool(full), eps=float(eps))  # fmt: skip


class GaussianNLLLoss(_Loss):
    """torch.nn.GaussianNLLLoss(*, full=False, eps=1e-6, reduction='mean'):
    ``forward(input, target, var)``."""

    fn = staticmethod(LF.gaussian_nll_loss)

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(None, None, reduction, full=bool(full), eps=float(eps))


class MultiMarginLoss(_Weighted):
    """torch.nn.MultiMarginLoss(p=1, margin=1.0, weight=None, size_average=None,
    reduce=None, reduction='mean')."""

    fn = staticmethod(LF.multi_margin_loss)

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction, p=int(p), margin=float(margin))
