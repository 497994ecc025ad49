"""torch.nn.functional's losses beyond the catalog's (nn layer), composed of
differentiable ops with torch's formulas, argument orders and reductions."""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from ..ops import composites as C
from ..runtime.tensor import Tensor
from ._activations import logsigmoid


def apply_reduction(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return C.mean(loss)
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ScellisError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def legacy_reduction(size_average, reduce_, reduction: str) -> str:
    """torch's deprecated ``size_average``/``reduce`` pair as a ``reduction``."""
    if size_average is None and reduce_ is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce_ = True if reduce_ is None else reduce_
    return "none" if not reduce_ else ("mean" if size_average else "sum")


def _weighted(loss: Tensor, weight) -> Tensor:
    return loss if weight is None else loss * weight


def _through(x: Tensor, low: float) -> Tensor:
    """``x`` clamped below at ``low`` with the gradient of ``x`` itself (torch clamps such
    variances in place under no_grad)."""
    return x + (x.clamp(low, None) - x).detach()


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean") -> Tensor:  # fmt: skip
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as torch does."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    log_x = input.log().clamp(-100.0, None)
    log_1mx = (1.0 - input).log().clamp(-100.0, None)
    loss = -(target * log_x + (1.0 - target) * log_1mx)
    return apply_reduction(_weighted(loss, weight), reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None) -> Tensor:  # fmt: skip
    """torch's stable form: (1 - t) x + (1 + (pw - 1) t) (log(1 + e^-|x|) + max(-x, 0))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if pos_weight is None:
        loss = C.bce_with_logits(input, target, "none")
    else:
        log_sig = ((-input.abs()).exp() + 1.0).log() + (-input).relu()
        loss = (1.0 - target) * input + (target * (pos_weight - 1.0) + 1.0) * log_sig
    return apply_reduction(_weighted(loss, weight), reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction="mean") -> Tensor:  # fmt: skip
    """Negative log-likelihood with classes on axis 1 ([N, C] or [N, C, d1, ...])."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    logp = input if input.ndim <= 2 else input.permute(0, *range(2, input.ndim), 1)
    if input.ndim == 1:  # one unbatched row
        logp, target = logp.unsqueeze(0), target.reshape((1,))
    n_cls = logp.shape[-1]
    w = weight if weight is not None else logp.new_ones((n_cls,))
    valid = target != ignore_index
    t = target.cast("i32").where(valid, 0)
    w_t = w.take(t, 0) * valid.cast(logp.dtype)
    loss = -(logp.gather(t.unsqueeze(-1), -1).squeeze(-1) * w_t)
    if reduction == "mean":
        return loss.sum() / w_t.sum()
    out = apply_reduction(loss, reduction)
    return out.reshape(()) if input.ndim == 1 and reduction == "none" else out


def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target: bool = False) -> Tensor:  # fmt: skip
    """target (log target - input), 0 where target is 0; 'batchmean' divides the sum by
    the batch size (the mathematically right KL), 'mean' by the element count."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target > 0
        safe = target.where(positive, 1.0)
        loss = (target * safe.log()).where(positive, 0.0) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return apply_reduction(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta: float = 1.0) -> Tensor:  # fmt: skip
    reduction = legacy_reduction(size_average, reduce, reduction)
    d = (input - target).abs()
    if beta == 0.0:
        return apply_reduction(d, reduction)
    loss = (d * d * (0.5 / beta)).where(d < beta, d - 0.5 * beta)
    return apply_reduction(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return apply_reduction((-(target * input)).softplus(), reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                        reduce=None, reduction="mean") -> Tensor:  # fmt: skip
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = (-target * (input1 - input2) + margin).relu()
    return apply_reduction(loss, reduction)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction="mean") -> Tensor:  # fmt: skip
    reduction = legacy_reduction(size_average, reduce, reduction)
    zero = input * 0.0
    loss = (margin - input).relu().where(target != 1, zero) + input.where(target != -1, zero)
    return apply_reduction(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, size_average=None,
                          reduce=None, reduction="mean") -> Tensor:  # fmt: skip
    """1 - cos for target 1, max(0, cos - margin) for target -1 (torch's 1e-12 guard)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    axis = input1.ndim - 1
    dot = (input1 * input2).sum(axis)
    mag = ((input1 * input1).sum(axis) + 1e-12) * ((input2 * input2).sum(axis) + 1e-12)
    cos = dot / mag.sqrt()
    zero = cos * 0.0
    loss = (1.0 - cos).where(target == 1, zero) + (cos - margin).relu().where(target == -1, zero)
    return apply_reduction(loss, reduction)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """The p-norm of x1 - x2 + eps over the last axis (torch adds eps before the norm)."""
    d = x1 - x2 + eps
    axis = max(x1.ndim, x2.ndim) - 1
    if p == 2.0:
        return d.square().sum(axis, keepdim=keepdim).sqrt()
    if p == 1.0:
        return d.abs().sum(axis, keepdim=keepdim)
    return (d.abs() ** float(p)).sum(axis, keepdim=keepdim) ** (1.0 / p)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Each vector divided by its norm (at least ``eps``), then the dot product."""
    n1 = x1.square().sum(dim, keepdim=True).sqrt().clamp(eps, None)
    n2 = x2.square().sum(dim, keepdim=True).sqrt().clamp(eps, None)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction="mean") -> Tensor:  # fmt: skip
    reduction = legacy_reduction(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return apply_reduction((d_pos - d_neg + margin).relu(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean") -> Tensor:  # fmt: skip
    """Per-class logistic loss averaged over the classes (the last axis), then reduced."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1.0 - target) * logsigmoid(-input))
    loss = C.mean(_weighted(loss, weight), input.ndim - 1)
    return apply_reduction(loss, reduction)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction="mean") -> Tensor:  # fmt: skip
    reduction = legacy_reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        t = target.where(big, 2.0)
        stirling = t * t.log() - t + (t * (2.0 * math.pi)).log() * 0.5
        loss = loss + stirling.where(big, 0.0)
    return apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,
                      reduction="mean") -> Tensor:  # fmt: skip
    """0.5 (log var + (input - target)^2 / var); ``var`` one per element, one per row
    (the last axis dropped) or with a last axis of 1."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ScellisError(f"gaussian_nll_loss: var of shape {var.shape} does not fit "
                               f"input {input.shape}")  # fmt: skip
    var = _through(var, eps)
    loss = (var.log() + (input - target).square() / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return apply_reduction(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    return C.l1(input, target, legacy_reduction(size_average, reduce, reduction))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean") -> Tensor:
    return C.mse(input, target, legacy_reduction(size_average, reduce, reduction))


def huber_loss(input, target, reduction="mean", delta: float = 1.0) -> Tensor:
    return C.huber(input, target, delta, reduction)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,
                      size_average=None, reduce=None, reduction="mean") -> Tensor:  # fmt: skip
    """sum over j != y of max(0, margin - x_y + x_j)^p / C, scaled by weight[y]."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ScellisError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target.reshape((x.shape[0],)).cast("i32")
    picked = x.gather(t.unsqueeze(-1), 1)
    hinge = (x - picked + margin).relu()
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight.take(t, 0).unsqueeze(-1)
    own = t.unsqueeze(-1) == x.arange_like(x.shape[1]).cast("i32")
    loss = hinge.where(own.logical_not(), 0.0).sum(1) * (1.0 / x.shape[1])
    if input.ndim == 1:
        loss = loss.reshape(())
    return apply_reduction(loss, reduction)
