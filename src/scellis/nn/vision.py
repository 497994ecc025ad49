"""torch.nn's image layers on [B, C, H, W] (nn layer): Conv2d, ConvTranspose1d/2d,
2-d pooling (windowed and adaptive), Upsample and PixelShuffle.

Each holds torch's parameters under torch's names and layouts (``weight``
[C_out, C_in/groups, kh, kw], a transposed conv's [C_in, C_out/groups, kh, kw],
``bias``), drawn as torch draws them (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), so
``load_state_dict(torch_module.state_dict())`` works; the forward is the matching
function of ``nn.functional``.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from ..catalog.blocks import image_ops as V
from ..catalog.module import Module
from . import _reset
from ._home import uniform_param
from ._resample import interpolate, pad_by_index

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class Conv2d(Module):
    """torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    dilation=1, groups=1, bias=True, padding_mode='zeros')."""

    reset_parameters = _reset.dense

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ScellisError(f"Conv2d: groups={groups} must divide in_channels={in_channels} "
                               f"and out_channels={out_channels}")  # fmt: skip
        if padding_mode not in PADDING_MODES:
            raise ScellisError(f"Conv2d: padding_mode must be one of {PADDING_MODES}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = V.pair(kernel_size, "kernel_size")
        self.stride, self.dilation = V.pair(stride, "stride"), V.pair(dilation, "dilation")
        self.padding = padding if isinstance(padding, str) else V.pair(padding, "padding")
        self.padding_mode = padding_mode
        kh, kw = self.kernel_size
        bound = 1.0 / math.sqrt(in_channels // groups * kh * kw)
        draw = dict(device=device, dtype=dtype, generator=generator)
        self.weight = uniform_param((out_channels, in_channels // groups, kh, kw), bound, **draw)
        self.bias = uniform_param((out_channels,), bound, **draw) if bias else None

    def forward(self, x):
        padding = self.padding
        if self.padding_mode != "zeros" and padding != "valid":
            lo, hi = V.conv_padding(padding, self.kernel_size, self.dilation, self.stride)
            lead = [0] * (x.ndim - 2)
            x = pad_by_index(x, lead + list(lo), lead + list(hi), self.padding_mode)
            padding = 0
        return V.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)  # fmt: skip


class _ConvTranspose(Module):
    spatial = 2
    reset_parameters = _reset.dense

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None, *, generator=None):  # fmt: skip
        """torch's constructor, the same for 1-d and 2-d (``spatial`` tells them apart)."""
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ScellisError(f"{name}: only padding_mode='zeros' exists in torch")
        if in_channels % groups or out_channels % groups:
            raise ScellisError(f"{name}: groups={groups} must divide the channels")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        fit = self._fit
        self.kernel_size, self.stride, self.padding = fit(kernel_size), fit(stride), fit(padding)
        self.output_padding, self.dilation = fit(output_padding), fit(dilation)
        k = math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(out_channels // groups * k)  # torch's fan_in: weight.shape[1]
        draw = dict(device=device, dtype=dtype, generator=generator)
        shape = (in_channels, out_channels // groups, *self.kernel_size)
        self.weight = uniform_param(shape, bound, **draw)
        self.bias = uniform_param((out_channels,), bound, **draw) if bias else None

    def _fit(self, v) -> tuple:
        if self.spatial == 2:
            return V.pair(v)
        return (int(v[0]),) if isinstance(v, (tuple, list)) else (int(v),)

    def _output_padding(self, x, output_size):
        """torch's ``output_size=`` at call time: the output_padding that reaches it."""
        if output_size is None:
            return self.output_padding
        want = list(output_size)[-self.spatial :]
        pad = []
        for a in range(self.spatial):
            n = x.shape[x.ndim - self.spatial + a]
            base = (n - 1) * self.stride[a] - 2 * self.padding[a]
            base += self.dilation[a] * (self.kernel_size[a] - 1) + 1
            extra = int(want[a]) - base
            if not 0 <= extra < max(self.stride[a], self.dilation[a]):
                raise ScellisError(f"{type(self).__name__}: output_size {output_size} is not "
                                   "reachable from this input")  # fmt: skip
            pad.append(extra)
        return tuple(pad)


class ConvTranspose2d(_ConvTranspose):
    """torch.nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=1,
    padding=0, output_padding=0, groups=1, bias=True, dilation=1)."""

    spatial = 2

    def forward(self, x, output_size=None):
        op = self._output_padding(x, output_size)
        return V.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)  # fmt: skip


class ConvTranspose1d(_ConvTranspose):
    """torch.nn.ConvTranspose1d on [B, C, T]."""

    spatial = 1

    def forward(self, x, output_size=None):
        op = self._output_padding(x, output_size)
        return V.conv_transpose1d(x, self.weight, self.bias, self.stride, self.padding, op,
                                  self.groups, self.dilation)  # fmt: skip


class MaxPool2d(Module):
    """torch.nn.MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False)."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):  # fmt: skip
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = bool(return_indices)

    def forward(self, x):
        return V.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)  # fmt: skip


class AvgPool2d(Module):
    """torch.nn.AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):  # fmt: skip
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return V.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)  # fmt: skip


class AdaptiveAvgPool2d(Module):
    """torch.nn.AdaptiveAvgPool2d(output_size): an int, a pair, None keeps a size."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return V.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveMaxPool2d(Module):
    """torch.nn.AdaptiveMaxPool2d(output_size)."""

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        if return_indices:
            raise V.no_indices("AdaptiveMaxPool2d")
        self.output_size = output_size

    def forward(self, x):
        return V.adaptive_max_pool2d(x, self.output_size)


class Upsample(Module):
    """torch.nn.Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None)."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):  # fmt: skip
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                           self.recompute_scale_factor)  # fmt: skip


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear with aligned corners, as torch's."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", True)


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = int(upscale_factor)

    def forward(self, x):
        return V.pixel_shuffle(x, self.upscale_factor)


class Unfold(Module):
    """torch.nn.Unfold(kernel_size, dilation=1, padding=0, stride=1): im2col."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (
            kernel_size, dilation, padding, stride)  # fmt: skip

    def forward(self, x):
        return V.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Unfold):
    """torch.nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, x):
        return V.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)  # fmt: skip


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = int(downscale_factor)

    def forward(self, x):
        return V.pixel_unshuffle(x, self.downscale_factor)
