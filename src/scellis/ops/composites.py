"""Composites (ops layer): ops written once over primitives, via tensor methods only.

The eager Tensor and the tracer both provide the methods used here, so each
composite has one definition; its gradient follows from the primitives' VJPs.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError, ShapeError
from ..base.shapes import numel, reduction_axes


def mean(x, axis=None, keepdim=False):
    axes = reduction_axes(axis, x.ndim)
    n = numel([x.shape[a] for a in axes])
    return x.sum(axes, keepdim=keepdim) * (1.0 / n) if n else x.sum(axes, keepdim=keepdim)


def var(x, axis=None, keepdim=False, correction=1):
    axes = reduction_axes(axis, x.ndim)
    n = numel([x.shape[a] for a in axes])
    d = x - mean(x, axes, keepdim=True)
    return (d * d).sum(axes, keepdim=keepdim) * (
        1.0 / max(n - correction, 0) if n > correction else float("nan")
    )


def softmax(x, axis=-1):
    # the shift by the (constant) max changes no gradient, so it is detached
    e = (x - x.max(axis, keepdim=True).detach()).exp()
    return e / e.sum(axis, keepdim=True)


def log_softmax(x, axis=-1):
    shifted = x - x.max(axis, keepdim=True).detach()
    return shifted - shifted.exp().sum(axis, keepdim=True).log()


def logsumexp(x, axis=-1, keepdim=False):
    m = x.max(axis, keepdim=True).detach()
    out = (x - m).exp().sum(axis, keepdim=True).log() + m
    return out if keepdim else out.squeeze(axis)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(normalized_shape)
    if tuple(x.shape[x.ndim - k :]) != tuple(normalized_shape):
        raise ShapeError(
            f"layer_norm over {tuple(normalized_shape)} but input ends in "
            f"{tuple(x.shape[x.ndim - k :])}"
        )
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = mean(x, axes, keepdim=True)
    d = x - mu
    v = mean(d * d, axes, keepdim=True)
    y = d * (v + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def gelu(x, approximate="none"):
    if approximate == "tanh":
        return x.gelu_tanh()
    if approximate == "none":
        return x.gelu_erf()
    raise ScellisError(f"gelu approximate must be 'none' or 'tanh', got {approximate!r}")


def one_hot(idx, num_classes, dtype="f32"):
    classes = idx.arange_like(num_classes)
    return (idx.unsqueeze(-1) == classes).cast(dtype)


def take(x, idx, axis=0):
    """``x`` indexed by an integer tensor along ``axis`` (embedding lookup for axis 0)."""
    axis = axis % x.ndim
    flat = idx.reshape((1,) * axis + (idx.numel,) + (1,) * (x.ndim - axis - 1))
    shape = list(x.shape)
    shape[axis] = idx.numel
    picked = x.gather(flat.expand(tuple(shape)), axis)
    return picked.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1 :]))


def stack(xs, axis=0):
    if not xs:
        raise ShapeError("stack needs at least one tensor")
    axis = axis % (xs[0].ndim + 1)
    return xs[0].unsqueeze(axis).cat([x.unsqueeze(axis) for x in xs[1:]], axis)


def dropout(x, p, mask):
    """``x`` with the elements where ``mask`` is False zeroed, the rest scaled 1/(1-p)."""
    if p == 0.0:
        return x
    return x * mask.cast(x.dtype) * (1.0 / (1.0 - p))


def _reduce(loss, reduction):
    if reduction == "mean":
        return mean(loss)
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ScellisError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def cross_entropy(logits, target, label_smoothing=0.0, ignore_index=-100, reduction="mean"):
    """Log-softmax + NLL in one stable pass; classes on the last axis, integer targets.

    With label smoothing ``e`` over ``C`` classes the loss per row is
    ``(1-e) * nll + e * mean_c(-logp_c)``; rows whose target is ``ignore_index`` count
    for nothing, and the mean divides by the rows that remain (torch's convention).
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ScellisError(f"label_smoothing must lie in [0, 1], got {label_smoothing}")
    if tuple(target.shape) != tuple(logits.shape[:-1]):
        raise ShapeError(
            f"cross_entropy: targets {target.shape} do not match logits "
            f"{logits.shape} without the class axis"
        )
    logp = log_softmax(logits, -1)
    valid = target != ignore_index
    safe = target.where(valid, 0)
    nll = -logp.gather(safe.unsqueeze(-1), -1).squeeze(-1)
    loss = nll * (1.0 - label_smoothing) if label_smoothing else nll
    if label_smoothing:
        loss = loss + mean(-logp, -1) * label_smoothing
    loss = loss.where(valid, 0.0)
    if reduction == "mean":
        return loss.sum() / valid.cast(loss.dtype).sum()
    return _reduce(loss, reduction)


def nll_loss(logp, target, ignore_index=-100, reduction="mean"):
    valid = target != ignore_index
    safe = target.where(valid, 0)
    loss = (-logp.gather(safe.unsqueeze(-1), -1).squeeze(-1)).where(valid, 0.0)
    if reduction == "mean":
        return loss.sum() / valid.cast(loss.dtype).sum()
    return _reduce(loss, reduction)


def mse(pred, target, reduction="mean"):
    d = pred - target
    return _reduce(d * d, reduction)


def l1(pred, target, reduction="mean"):
    return _reduce((pred - target).abs(), reduction)


def huber(pred, target, delta=1.0, reduction="mean"):
    if delta <= 0:
        raise ScellisError(f"huber delta must be > 0, got {delta}")
    d = pred - target
    a = d.abs()
    quad = d * d * 0.5
    lin = (a - 0.5 * delta) * delta
    return _reduce(quad.where(a < delta, lin), reduction)


def bce_with_logits(logits, target, reduction="mean"):
    # max(x, 0) - x*t + log(1 + exp(-|x|)): stable for large |x|
    loss = logits.relu() - logits * target + ((-logits.abs()).exp() + 1.0).log()
    return _reduce(loss, reduction)


SQRT_2 = math.sqrt(2.0)
