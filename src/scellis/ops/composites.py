"""Composites (ops layer): ops written once over primitives, via tensor methods only.

The eager Tensor and the tracer both provide the methods used here, so each
composite has one definition; its gradient follows from the primitives' VJPs.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError, ShapeError
from ..base.shapes import numel, reduction_axes
from .norm import fused_norm_fits, row_norm


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
    """exp(x - max) / sum(exp(x - max)) over ``axis``. Its backward is torch's,
    y * (g - sum(g * y)): four ops from one tape node, where the VJPs of the forward's
    five ops would take about ten (attention takes one softmax per layer)."""
    return x.with_vjp("softmax", _softmax, _softmax_vjp, axis=axis)


def _softmax(x, axis):
    # the shift by the (constant) max changes no gradient, so it is detached
    e = (x - x.amax(axis, keepdim=True).detach()).exp()
    return e / e.sum(axis, keepdim=True)


def _softmax_vjp(node, g):
    y, axis = node.saved["out"], node.attrs["axis"]
    return (y * (g - (g * y).sum(axis, keepdim=True)),)


def log_softmax(x, axis=-1):
    shifted = x - x.amax(axis, keepdim=True).detach()
    return shifted - shifted.exp().sum(axis, keepdim=True).log()


def logsumexp(x, axis=-1, keepdim=False):
    m = x.amax(axis, keepdim=True).detach()
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
    if k == 1 and fused_norm_fits(x, weight, bias):
        return row_norm(x, weight, bias, eps)
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


def rms_norm(x, weight=None, eps=1e-5):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis."""
    if fused_norm_fits(x, weight):
        return row_norm(x, weight, None, eps, rms=True)
    y = x * (mean(x * x, -1, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


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
    attrs = {"target": target, "smoothing": label_smoothing, "ignore": ignore_index,
             "reduction": reduction}  # fmt: skip
    return logits.with_vjp("cross_entropy", _cross_entropy, _cross_entropy_vjp, True, **attrs)


def _cross_entropy(logits, target, smoothing, ignore, reduction):
    logp = log_softmax(logits, -1)
    valid = target != ignore
    safe = target.where(valid, 0)
    nll = -logp.gather(safe.unsqueeze(-1), -1).squeeze(-1)
    loss = nll * (1.0 - smoothing) if smoothing else nll
    if smoothing:
        loss = loss + mean(-logp, -1) * smoothing
    loss = loss.where(valid, 0.0)
    kept = {"logp": logp, "valid": valid, "safe": safe}
    if reduction == "mean":
        rows = valid.cast(loss.dtype)
        count = rows.sum()
        return loss.sum() / count, {**kept, "rows": rows, "count": count}
    return _reduce(loss, reduction), kept


def _cross_entropy_vjp(node, g):
    """(softmax - the smoothed one-hot target) times each kept row's share of ``g``: six
    ops, where the forward's ops' own VJPs took about a dozen nodes."""
    s, a = node.saved, node.attrs
    logp, e = s["logp"], a["smoothing"]
    share = g / s["count"] if a["reduction"] == "mean" else g
    rows = s.get("rows")
    c = (s["valid"].cast(logp.dtype) if rows is None else rows) * share  # per row
    grad = logp.exp() * c.unsqueeze(-1)
    hot = (c * (1.0 - e) if e else c).unsqueeze(-1)
    grad = grad - hot.scatter_add(s["safe"].unsqueeze(-1), -1, logp.shape)
    if e:
        grad = grad - (c * (e / logp.shape[-1])).unsqueeze(-1)
    return (grad,)


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


# -- sequences over time: [B, T, C], time on axis 1 --


def flip(x, axis):
    """``x`` reversed along ``axis`` (a gather with the reversed positions)."""
    axis = axis % x.ndim
    n = x.shape[axis]
    rev = (x.arange_like(n) * -1.0 + (n - 1)).cast("i32")
    return take(x, rev, axis)


def time_windows(x, size, stride=1, dilation=1, lo=0, hi=0, value=0.0):
    """The ``size`` taps of every window over time of ``x`` [B, T, C], each [B, T_out, C]:
    tap ``j`` of output step ``t`` is step ``t*stride + j*dilation`` of ``x`` padded
    with ``lo`` steps of ``value`` before and ``hi`` after."""
    if x.ndim != 3:
        raise ShapeError(f"windows over time take [B, T, C], got {x.shape}")
    if lo or hi:
        x = x.pad([0, lo, 0], [0, hi, 0], value=value)
    B, T, C = x.shape
    span = dilation * (size - 1) + 1
    if T < span:
        raise ShapeError(f"a window of {span} steps does not fit a sequence of {T}")
    n = (T - span) // stride + 1
    return [
        x.slice([0, j * dilation, 0], [B, j * dilation + (n - 1) * stride + 1, C], [1, stride, 1])
        for j in range(size)
    ]


def conv1d(x, weight, bias=None, stride=1, lo=0, hi=0, dilation=1, groups=1):
    """torch's conv1d on a time-major layout: ``x`` [B, T, C_in], ``weight`` [C_out,
    C_in/groups, k] (torch's), result [B, T_out, C_out]; ``lo``/``hi`` zero steps of
    padding before/after. The taps are unfolded side by side, then one (grouped) matmul."""
    c_out, cg, k = weight.shape
    B, _, c_in = x.shape
    if c_in != cg * groups:
        raise ShapeError(f"conv1d: weight {weight.shape} with groups={groups} takes {cg * groups} "
                         f"channels, the input has {c_in}")  # fmt: skip
    taps = time_windows(x, k, stride, dilation, lo, hi)
    n = taps[0].shape[1]
    u = taps[0].cat(taps[1:], -1) if k > 1 else taps[0]  # [B, n, k*C_in], tap-major
    if groups == 1:
        w = weight.permute(2, 1, 0).reshape(k * cg, c_out)
        y = u.reshape(B * n, k * cg) @ w
    else:
        og = c_out // groups
        u = u.reshape(B * n, k, groups, cg).permute(2, 0, 1, 3).reshape(groups, B * n, k * cg)
        w = weight.reshape(groups, og, cg, k).permute(0, 3, 2, 1).reshape(groups, k * cg, og)
        y = (u @ w).permute(1, 0, 2).reshape(B * n, c_out)
    if bias is not None:
        y = y + bias
    return y.reshape(B, n, c_out)


def max_pool1d(x, size, stride=None, lo=0, hi=0):
    """The max over each window of ``size`` steps of ``x`` [B, T, C] (padding never wins)."""
    taps = time_windows(x, size, stride or size, 1, lo, hi, value=-3.4028234663852886e38)
    return stack(taps, 2).amax(2)


def avg_pool1d(x, size, stride=None, lo=0, hi=0):
    """The mean over each window of ``size`` steps of ``x`` [B, T, C] (padding counts as 0)."""
    taps = time_windows(x, size, stride or size, 1, lo, hi)
    return mean(stack(taps, 2), 2)
