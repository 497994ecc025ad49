"""torch.nn's batch, group and instance norms over channels on axis 1, and channel
dropout (nn layer).

``batch_norm`` is torch's F.batch_norm: training normalises with the batch's
statistics (biased variance) and moves the running ones toward them (unbiased
variance, ``r = (1 - momentum) r + momentum s``; momentum None: a cumulative average
over ``num_batches_tracked``); eval uses the running ones. Parameters and buffers
carry torch's names (``weight``, ``bias``, ``running_mean``, ``running_var``,
``num_batches_tracked``), so state dicts cross key for key.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..base.errors import ScellisError, ShapeError
from ..catalog.module import Module
from ..ops import composites as C
from ..runtime import functional as RF
from ..runtime.creation import full
from ..runtime.inplace import write_into
from . import _reset
from ._home import constant_param
from ._inplace import honours_inplace, write_back


def _channel_view(t, ndim: int):
    return t.reshape((1, t.shape[0]) + (1,) * (ndim - 2))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5) -> object:  # fmt: skip
    """torch's F.batch_norm over every axis but 1; updates the running buffers in place
    when training (``momentum`` None is handled by the module, which knows the count)."""
    axes = (0, *range(2, input.ndim))
    if training or running_mean is None:
        mu = C.mean(input, axes, keepdim=True)
        d = input - mu
        var = C.mean(d * d, axes, keepdim=True)
        if training and running_mean is not None:
            n = input.numel // input.shape[1]
            _update(running_mean, running_var, mu, var, n, momentum)
    else:
        d = input - _channel_view(running_mean, input.ndim)
        var = _channel_view(running_var, input.ndim)
    y = d * (var + eps).rsqrt()
    if weight is not None:
        y = y * _channel_view(weight, input.ndim)
    if bias is not None:
        y = y + _channel_view(bias, input.ndim)
    return y


def _update(running_mean, running_var, mu, var, n: int, momentum: float) -> None:
    with no_grad():
        c = running_mean.shape[0]
        unbiased = var.detach().reshape((c,)) * (n / (n - 1) if n > 1 else 1.0)
        new_mean = running_mean * (1.0 - momentum) + mu.detach().reshape((c,)) * momentum
        new_var = running_var * (1.0 - momentum) + unbiased * momentum
        write_into(running_mean, new_mean)
        write_into(running_var, new_var)


class _BatchNorm(Module):
    dims = (4,)
    reset_parameters = _reset.affine

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):  # fmt: skip
        super().__init__()
        n = int(num_features)
        self.num_features, self.eps, self.momentum = n, float(eps), momentum
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        self.weight = constant_param((n,), 1.0, device, dtype) if affine else None
        self.bias = constant_param((n,), 0.0, device, dtype) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", full((n,), 0.0, dtype, device))
            self.register_buffer("running_var", full((n,), 1.0, dtype, device))
            self.register_buffer("num_batches_tracked", full((), 0, "i32", device))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with no_grad():
                write_into(self.running_mean, self.running_mean.zeros_like())
                write_into(self.running_var, self.running_var.ones_like())
                write_into(self.num_batches_tracked, self.num_batches_tracked.zeros_like())

    def forward(self, x):
        if x.ndim not in self.dims or x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}({self.num_features}) takes "
                             f"{' or '.join(f'{d}-d' for d in self.dims)} input with "
                             f"{self.num_features} channels on axis 1, got {x.shape}")  # fmt: skip
        use_batch = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                write_into(self.num_batches_tracked, self.num_batches_tracked + 1)
            if self.momentum is None:  # the count is read back only for this average
                momentum = 1.0 / int(self.num_batches_tracked.item())
        buffers = (self.running_mean, self.running_var)
        if not self.track_running_stats:
            buffers = (None, None)
        return batch_norm(x, *buffers, self.weight, self.bias, use_batch, momentum, self.eps)


class BatchNorm2d(_BatchNorm):
    """torch.nn.BatchNorm2d(num_features, eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True) on [B, C, H, W]."""

    dims = (4,)


class BatchNorm3d(_BatchNorm):
    dims = (5,)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """torch's F.group_norm: channels (axis 1) split into groups, each normalised over
    its channels and all spatial positions (biased variance)."""
    B, ch = input.shape[0], input.shape[1]
    if ch % num_groups:
        raise ScellisError(f"group_norm: {ch} channels do not split into {num_groups} groups")
    g = input.reshape(B, num_groups, -1)
    mu = C.mean(g, 2, keepdim=True)
    d = g - mu
    y = (d * (C.mean(d * d, 2, keepdim=True) + eps).rsqrt()).reshape(input.shape)
    if weight is not None:
        y = y * _channel_view(weight, input.ndim)
    if bias is not None:
        y = y + _channel_view(bias, input.ndim)
    return y


class GroupNorm(Module):
    """torch.nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)."""

    reset_parameters = _reset.affine

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None):  # fmt: skip
        super().__init__()
        if num_channels % num_groups:
            raise ScellisError("GroupNorm: num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, float(eps)
        self.affine = bool(affine)
        self.weight = constant_param((num_channels,), 1.0, device, dtype) if affine else None
        self.bias = constant_param((num_channels,), 0.0, device, dtype) if affine else None

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):  # fmt: skip
    """torch's F.instance_norm: each (sample, channel) normalised over its positions;
    given running buffers, they move toward the batch's average of those statistics
    (unbiased variance), and ``use_input_stats=False`` normalises with them instead."""
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ScellisError("instance_norm: use_input_stats=False needs running_mean "
                               "and running_var")  # fmt: skip
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if running_mean is not None:
        _update_per_instance(input, running_mean, running_var, momentum)
    return group_norm(input, input.shape[1], weight, bias, eps)


def _update_per_instance(x, running_mean, running_var, momentum: float) -> None:
    """torch's update: each instance's statistics as a batch norm of one would take them,
    then averaged over the batch."""
    with no_grad():
        B, c = x.shape[0], x.shape[1]
        rows = x.detach().reshape(B, c, -1)
        n = rows.shape[2]
        mu = C.mean(rows, 2, keepdim=True)
        d = rows - mu
        var = C.mean(d * d, 2) * (n / (n - 1) if n > 1 else 1.0)
        new_mean = running_mean * (1.0 - momentum) + C.mean(mu.reshape(B, c), 0) * momentum
        new_var = running_var * (1.0 - momentum) + C.mean(var, 0) * momentum
        write_into(running_mean, new_mean)
        write_into(running_var, new_var)


class _InstanceNorm(Module):
    dims = 3
    reset_parameters = _reset.affine

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):  # fmt: skip
        super().__init__()
        self.num_features, self.eps, self.affine = int(num_features), float(eps), bool(affine)
        self.momentum, self.track_running_stats = momentum, bool(track_running_stats)
        n = self.num_features
        self.weight = constant_param((n,), 1.0, device, dtype) if affine else None
        self.bias = constant_param((n,), 0.0, device, dtype) if affine else None
        if self.track_running_stats:  # torch's buffers; the count stays 0, as in torch
            self.register_buffer("running_mean", full((n,), 0.0, dtype, device))
            self.register_buffer("running_var", full((n,), 1.0, dtype, device))
            self.register_buffer("num_batches_tracked", full((), 0, "i32", device))
        else:
            self.running_mean = self.running_var = None

    def forward(self, x):
        unbatched = x.ndim == self.dims - 1
        xb = x.unsqueeze(0) if unbatched else x
        momentum = 0.0 if self.momentum is None else self.momentum
        use_input = self.training or not self.track_running_stats
        y = instance_norm(xb, self.running_mean, self.running_var, self.weight, self.bias,
                          use_input, momentum, self.eps)  # fmt: skip
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """torch.nn.InstanceNorm1d(num_features, eps=1e-5, momentum=0.1, affine=False) on
    [B, C, L] or [C, L]."""

    dims = 3


class InstanceNorm2d(_InstanceNorm):
    """torch.nn.InstanceNorm2d on [B, C, H, W] or [C, H, W]."""

    dims = 4


def channel_dropout(x, p: float, training: bool, spatial: int):
    """Whole channels zeroed with probability p (the rest scaled 1/(1-p)) in training:
    one mask value per (sample, channel), as torch's dropout1d/2d."""
    if not training or p == 0.0:
        return x
    if not 0.0 <= p < 1.0:
        raise ScellisError(f"dropout probability must lie in [0, 1), got {p}")
    lead = x.ndim - spatial
    keep = RF.dropout(x.new_ones(tuple(x.shape[:lead]) + (1,) * spatial), p, True)
    return x * keep


@honours_inplace
def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return channel_dropout(input, p, training, 1)


@honours_inplace
def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return channel_dropout(input, p, training, 2)


class Dropout1d(Module):
    spatial = 1

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = float(p)
        object.__setattr__(self, "inplace", bool(inplace))

    def forward(self, x):
        out = channel_dropout(x, self.p, self.training, self.spatial)
        return write_back(x, out, self.inplace, "dropout")


class Dropout2d(Dropout1d):
    spatial = 2


class Dropout3d(Dropout1d):
    spatial = 3


@honours_inplace
def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    return channel_dropout(input, p, training, 3)
