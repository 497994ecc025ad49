"""Pooling over time (catalog layer): windowed and global max / average pooling.

Sequences are [B, T, C]; windows slide over T and every channel is pooled on its own.
Written with the ``max_pool1d`` / ``avg_pool1d`` composites (taps of each window stacked,
then a max or a mean), so they hold no parameters and run on every device.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...base.errors import ScellisError, ShapeError
from ...ops.composites import avg_pool1d, max_pool1d, mean
from ..registry import field, register
from .common import Block

GLOBAL_MODES = ("avg", "max")


@dataclass(frozen=True)
class MaxPool1dConfig:
    """Max pooling over time, as torch's MaxPool1d: [B, T, C] to [B, T_out, C].

    Each output step is the max over a window of kernel_size steps, channel by channel."""

    kernel_size: int = field(doc="steps per window", min=1)
    stride: int | None = field(None, doc="steps between windows; empty: kernel_size", min=1)
    padding: int = field(0, doc="steps of padding on both sides (never the max)", min=0)


@dataclass(frozen=True)
class AvgPool1dConfig:
    """Average pooling over time, as torch's AvgPool1d: [B, T, C] to [B, T_out, C].

    Each output step is the mean over a window of kernel_size steps, channel by channel."""

    kernel_size: int = field(doc="steps per window", min=1)
    stride: int | None = field(None, doc="steps between windows; empty: kernel_size", min=1)
    padding: int = field(0, doc="zero steps on both sides, counted in the mean", min=0)


class _Pool1d(Block):
    pool = staticmethod(max_pool1d)

    def __init__(self, cfg, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        if cfg.padding * 2 > cfg.kernel_size:
            raise ScellisError(
                f"padding ({cfg.padding}) must be at most half of kernel_size ({cfg.kernel_size})"
            )

    def forward(self, x):
        c = self.config
        if x.ndim != 3:
            raise ShapeError(f"{type(self).__name__} takes [B, T, C], got {x.shape}")
        return self.pool(x, c.kernel_size, c.stride or c.kernel_size, c.padding, c.padding)


class MaxPool1d(_Pool1d):
    """No parameters; the gradient goes to each window's maximum."""

    pool = staticmethod(max_pool1d)


class AvgPool1d(_Pool1d):
    """No parameters; every step of a window gets an equal share of the gradient."""

    pool = staticmethod(avg_pool1d)


@dataclass(frozen=True)
class GlobalPool1dConfig:
    """The max or the mean over all of time: [B, T, C] to [B, C]."""

    mode: str = field("avg", doc="'avg' (the mean over T) or 'max'", choices=GLOBAL_MODES)


class GlobalPool1d(Block):
    """torch's ``x.mean(1)`` / ``x.amax(1)`` on [B, T, C] (adaptive pooling to one step)."""

    def __init__(self, cfg: GlobalPool1dConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)

    def forward(self, x):
        if x.ndim != 3:
            raise ShapeError(f"GlobalPool1d takes [B, T, C], got {x.shape}")
        return mean(x, 1) if self.config.mode == "avg" else x.amax(1)


register("nn/max_pool1d", "block", MaxPool1dConfig, MaxPool1d, builtin=True)
register("nn/avg_pool1d", "block", AvgPool1dConfig, AvgPool1d, builtin=True)
register("nn/global_pool1d", "block", GlobalPool1dConfig, GlobalPool1d, builtin=True)
