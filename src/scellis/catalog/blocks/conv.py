"""Convolution over time (catalog layer): Conv1d and a temporal convolutional network.

Sequences are [B, T, C] (batch, time, channels), as the recurrent and dense blocks take
them, so a conv can follow an embedding or feed an LSTM without a transpose. Parameters
are torch's (``weight`` [C_out, C_in/groups, k], ``bias`` [C_out]) and start as torch
draws them, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = C_in/groups * k. The forward
is the ``conv1d`` composite: the k taps unfolded side by side and one matmul. Where the
step's kernel choice fuses convs (the ``fast`` tier), an f32 conv of one group is one
``time_unfold`` launch and a dense layer over its columns (``conv1d_columns``), which
that tier runs as its fused ``dense_act`` (the bias, and a following ReLU, in the
matmul's store).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...base.dtypes import f32
from ...base.errors import ScellisError
from ...devices.kernel_choice import current as kernel_choice
from ...ops.composites import conv1d
from ...runtime.functional import dropout
from ..module_precision import autocast_applies
from ..registry import field, register
from .common import ACTIVATIONS, Block, dense, dense_act

PADDINGS = ("valid", "same", "causal")


def time_padding(padding, kernel_size: int, dilation: int, stride: int = 1) -> tuple[int, int]:
    """Steps of zeros before and after the sequence: an int pads both sides; ``valid``
    none; ``same`` keeps the length (stride 1; the odd step goes after, as torch);
    ``causal`` puts all ``dilation*(k-1)`` before, so step t sees steps <= t only."""
    total = dilation * (kernel_size - 1)
    if isinstance(padding, bool) or not isinstance(padding, (int, str)):
        raise ScellisError(f"padding must be an int or one of {PADDINGS}, got {padding!r}")
    if isinstance(padding, int):
        if padding < 0:
            raise ScellisError(f"padding must be >= 0, got {padding}")
        return padding, padding
    if padding == "valid":
        return 0, 0
    if padding == "same":
        if stride != 1:
            raise ScellisError("padding 'same' needs stride 1")
        return total // 2, total - total // 2
    if padding == "causal":
        return total, 0
    raise ScellisError(f"padding must be an int or one of {', '.join(PADDINGS)}, got {padding!r}")


@dataclass(frozen=True)
class Conv1dConfig:
    """A 1-d convolution over time on [B, T, C_in] to [B, T_out, C_out] (torch's Conv1d)."""

    in_channels: int = field(doc="channels per time step (C_in, the input's last axis)", min=1)
    out_channels: int = field(doc="channels of the output (C_out)", min=1)
    kernel_size: int = field(doc="taps per window (k)", min=1)
    stride: int = field(1, doc="steps between windows", min=1)
    padding: int | str = field(
        0,
        doc="zero steps on both sides, or 'valid' (none), 'same' (keep the length, "
        "stride 1) or 'causal' (dilation*(k-1) before: no step sees the future)",
    )
    dilation: int = field(1, doc="steps between the taps of a window", min=1)
    groups: int = field(1, doc="channel groups convolved apart (divides C_in and C_out)", min=1)
    bias: bool = field(True, doc="learned bias per output channel")


class Conv1d(Block):
    """torch.nn.Conv1d on time-major [B, T, C]: ``weight`` [C_out, C_in/groups, k], ``bias``."""

    def __init__(self, cfg: Conv1dConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        g = cfg.groups
        if cfg.in_channels % g or cfg.out_channels % g:
            raise ScellisError(
                f"groups={g} must divide in_channels={cfg.in_channels} and "
                f"out_channels={cfg.out_channels}"
            )
        self.pads = time_padding(cfg.padding, cfg.kernel_size, cfg.dilation, cfg.stride)
        fan_in = cfg.in_channels // g * cfg.kernel_size
        bound = 1.0 / math.sqrt(fan_in)
        self.weight = self.uniform((cfg.out_channels, cfg.in_channels // g, cfg.kernel_size), bound)
        self.bias = self.uniform((cfg.out_channels,), bound) if cfg.bias else None

    def forward(self, x):
        return self.activated(x, None)

    def activated(self, x, activation: str | None):
        """``ACTIVATIONS[activation](self(x))`` (the conv alone for None), fused with the
        conv's matmul where the kernel choice fuses convs and the layer allows it."""
        c = self.config
        lo, hi = self.pads
        if _fuses_conv(x, self.weight, c.groups):
            return conv1d_columns(x, self.weight, self.bias, c.stride, lo, hi, c.dilation,
                                  activation)  # fmt: skip
        y = conv1d(x, self.weight, self.bias, c.stride, lo, hi, c.dilation, c.groups)
        return y if activation is None else ACTIVATIONS[activation](y)


def _fuses_conv(x, weight, groups: int) -> bool:
    """Whether the conv runs as unfolded columns and a dense layer: the step's kernel
    choice fuses convs (the ``fast`` tier), one group, f32."""
    return kernel_choice().fuses("conv") and groups == 1 and x.dtype == weight.dtype == f32


def conv1d_columns(x, weight, bias, stride, lo, hi, dilation, activation=None):
    """A conv of one group as a dense layer over the unfolded taps: ``time_unfold``'s
    columns are channel-major, so torch's weight [C_out, C_in, k] is the dense weight
    [C_out, C_in*k] as a free view (no permuted copy of it, nor of its gradient)."""
    c_out, c_in, k = weight.shape
    if k == 1 and stride == 1 and not lo and not hi:
        cols = x  # every window is one step: the columns are the input itself
    else:
        cols = x.prim("time_unfold", size=k, stride=stride, dilation=dilation, lo=lo, hi=hi)
    w = weight.reshape(c_out, c_in * k)
    return dense(cols, w, bias) if activation is None else dense_act(cols, w, bias, activation)


def activated_conv(layer: Conv1d, x, activation: str):
    """``ACTIVATIONS[activation](layer(x))``, the activation fused with the conv where
    ``layer`` is a plain Conv1d: a subclass's forward, a hook or autocast keeps the
    layer's own call (as ``linear.activated`` does for a Linear)."""
    hooks = layer.__dict__.get("_hooks") or {}
    plain = type(layer).forward is Conv1d.forward and not any(hooks.values())
    if plain and not autocast_applies():
        return layer.activated(x, activation)
    return ACTIVATIONS[activation](layer(x))


@dataclass(frozen=True)
class TCNConfig:
    """A temporal convolutional network on [B, T, C]; the output keeps the length.

    Residual blocks of two dilated causal convs with ReLU and dropout, block i dilated
    by 2**i (Bai et al. 2018)."""

    in_channels: int = field(doc="channels per time step of the input", min=1)
    channels: int = field(doc="channels of every residual block (the output's last axis)", min=1)
    num_blocks: int = field(2, doc="residual blocks; block i dilates by 2**i", min=1)
    kernel_size: int = field(3, doc="taps of each conv", min=1)
    dropout: float = field(0.0, doc="dropout after each conv's ReLU, in training", min=0, max=1)


class TemporalBlock(Block):
    """relu(x' + dropout(relu(conv2(dropout(relu(conv1(x))))))), x' = x or ``down``(x), a 1x1
    conv where the channels change. Children ``conv1``, ``conv2`` (and ``down``)."""

    def __init__(self, cfg: TCNConfig, c_in: int, dilation: int, *, device=None, dtype=None,
                 gen=None):  # fmt: skip
        super().__init__(cfg, device, dtype, gen)
        k, c = cfg.kernel_size, cfg.channels
        conv = lambda a, b, k, d, pad: Conv1d(Conv1dConfig(a, b, k, 1, pad, d), **self.ctx)  # noqa: E731
        self.conv1 = conv(c_in, c, k, dilation, "causal")
        self.conv2 = conv(c, c, k, dilation, "causal")
        self.down = conv(c_in, c, 1, 1, 0) if c_in != c else None

    def forward(self, x):
        p = self.config.dropout
        h = dropout(activated_conv(self.conv1, x, "relu"), p, self.training)
        h = dropout(activated_conv(self.conv2, h, "relu"), p, self.training)
        skip = self.down(x) if self.down is not None else x
        return (h + skip).relu()


class TCN(Block):
    """Children ``blocks.0``, ``blocks.1``, ...: TemporalBlock i with dilation 2**i."""

    def __init__(self, cfg: TCNConfig, *, device=None, dtype=None, gen=None):
        super().__init__(cfg, device, dtype, gen)
        self.blocks = [
            TemporalBlock(cfg, cfg.in_channels if i == 0 else cfg.channels, 2**i, **self.ctx)
            for i in range(cfg.num_blocks)
        ]

    def receptive_field(self) -> int:
        """Steps of input each output step sees: 1 + 2*(k-1)*(2**n - 1)."""
        c = self.config
        return 1 + 2 * (c.kernel_size - 1) * (2**c.num_blocks - 1)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


register("nn/conv1d", "block", Conv1dConfig, Conv1d, builtin=True)
register("nn/tcn", "block", TCNConfig, TCN, builtin=True)
