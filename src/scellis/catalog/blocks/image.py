"""Image blocks on [B, C, H, W] (catalog layer): Conv2d, BatchNorm2d, MaxPool2d and
AvgPool2d, as torch lays images out (channels first).

Square kernels here (an int per size, as an SML field holds one); ``scellis.nn``'s
torch-shaped layers take torch's pairs too and share the forwards of ``image_ops``.
Parameters are torch's (``weight`` [C_out, C_in/groups, k, k], ``bias``;
``running_mean``, ``running_var``), drawn as torch draws them, so a record's block and
a torch module exchange state dicts key for key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.errors import ScellisError, ShapeError
from ..registry import field, register
from . import image_ops as V
from .common import Block
from .norm import BatchNorm1d, BatchNorm1dConfig


@dataclass(frozen=True)
class Conv2dConfig:
    """A 2-d convolution, [B, C_in, H, W] to [B, C_out, H_out, W_out] (torch's Conv2d)."""

    in_channels: int = field(doc="channels of the input (C_in, axis 1)", min=1)
    out_channels: int = field(doc="channels of the output (C_out)", min=1)
    kernel_size: int = field(doc="height and width of the kernel", min=1)
    stride: int = field(1, doc="pixels between windows", min=1)
    padding: int | str = field(0, doc="zero pixels on every side, or 'valid' or 'same'")
    dilation: int = field(1, doc="pixels between the taps of a window", min=1)
    groups: int = field(1, doc="channel groups convolved apart (divides both)", min=1)
    bias: bool = field(True, doc="learned bias per output channel")


class Conv2d(Block):
    """``weight`` [C_out, C_in/groups, k, k] and ``bias``, U(-1/sqrt(fan_in), ..)."""

    def __init__(self, cfg: Conv2dConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        g, k = cfg.groups, cfg.kernel_size
        if cfg.in_channels % g or cfg.out_channels % g:
            raise ScellisError(f"groups={g} must divide in_channels={cfg.in_channels} and "
                               f"out_channels={cfg.out_channels}")  # fmt: skip
        bound = 1.0 / math.sqrt(cfg.in_channels // g * k * k)
        self.weight = self.uniform((cfg.out_channels, cfg.in_channels // g, k, k), bound)
        self.bias = self.uniform((cfg.out_channels,), bound) if cfg.bias else None

    def forward(self, x):
        c = self.config
        return V.conv2d(x, self.weight, self.bias, c.stride, c.padding, c.dilation, c.groups)


@dataclass(frozen=True)
class BatchNorm2dConfig(BatchNorm1dConfig):
    """Batch normalisation per channel (axis 1) of [B, C, H, W], as torch's BatchNorm2d:
    batch statistics in training (the running ones updated), running ones in eval."""


class BatchNorm2d(BatchNorm1d):
    """BatchNorm1d's parameters, buffers and update over the channels of an image."""

    def forward(self, x):
        c = self.config
        if x.ndim != 4 or x.shape[1] != c.num_features:
            raise ShapeError(f"BatchNorm2d takes [B, {c.num_features}, H, W], got {x.shape}")
        B, ch, H, W = x.shape
        rows = x.permute(0, 2, 3, 1).reshape(B, H * W, ch)  # channels last, as the 1-d block
        return super().forward(rows).reshape(B, H, W, ch).permute(0, 3, 1, 2)


@dataclass(frozen=True)
class Pool2dConfig:
    """Max or average pooling of square windows over [B, C, H, W] (torch's MaxPool2d /
    AvgPool2d; the average counts the zero padding, torch's default)."""

    kernel_size: int = field(doc="height and width of a window", min=1)
    stride: int | None = field(None, doc="pixels between windows; empty: kernel_size", min=1)
    padding: int = field(0, doc="pixels of padding on every side (at most half a window)", min=0)


class MaxPool2d(Block):
    def __init__(self, cfg: Pool2dConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def forward(self, x):
        c = self.config
        return V.max_pool2d(x, c.kernel_size, c.stride, c.padding)


class AvgPool2d(MaxPool2d):
    def forward(self, x):
        c = self.config
        return V.avg_pool2d(x, c.kernel_size, c.stride, c.padding)


register("nn/conv2d", "block", Conv2dConfig, Conv2d, builtin=True)
register("nn/batch_norm2d", "block", BatchNorm2dConfig, BatchNorm2d, builtin=True)
register("nn/max_pool2d", "block", Pool2dConfig, MaxPool2d, builtin=True)
register("nn/avg_pool2d", "block", Pool2dConfig, AvgPool2d, builtin=True)
