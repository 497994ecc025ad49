"""torch-shaped Conv1d, pooling (windowed and adaptive to one step) and BatchNorm1d (nn layer).

torch lays sequences out channels first, [B, C, T]; the catalog blocks take [B, T, C].
These classes are the blocks themselves with torch's constructor and calling convention:
the input is transposed in, the output back, so ``nn.Conv1d(...)(x)`` matches
``torch.nn.Conv1d(...)(x)`` on the same [B, C, T] tensor and parameters keep torch's
names and layouts (``weight`` [out, in/groups, k], ``bias``; ``running_mean`` ...), so
``load_state_dict(torch_module.state_dict())`` works. An unbatched [C, T] input gives an
unbatched result.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..catalog import blocks as B
from ..catalog.blocks.conv import time_padding
from ..catalog.blocks.image_ops import adaptive_pool
from ..runtime.creation import full
from ..runtime.inplace import write_into
from . import _reset
from ._home import block_args, unsupported
from ._resample import pad_by_index
from .functional import avg_pool1d, max_pool1d


def _one(v, what: str, layer: str) -> int:
    """torch takes ``k`` or ``(k,)`` for a 1-d size."""
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise unsupported(f"{what}={v!r}", layer)
        v = v[0]
    return int(v)


def _channels_last(block_forward, x):
    unbatched = x.ndim == 2
    if unbatched:
        x = x.unsqueeze(0)
    y = block_forward(x.permute(0, 2, 1)).permute(0, 2, 1)
    return y.squeeze(0) if unbatched else y


class Conv1d(B.Conv1d):
    """torch.nn.Conv1d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    dilation=1, groups=1, bias=True, padding_mode='zeros') on [B, C, T]; ``padding``
    may also be 'valid', 'same' or (not in torch) 'causal'. Reflect, replicate and
    circular padding are added before the block, which then pads no more."""

    reset_parameters = _reset.dense

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None, *,
                 generator=None):  # fmt: skip
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise unsupported(f"padding_mode={padding_mode!r}", "Conv1d")
        if not isinstance(padding, str):
            padding = _one(padding, "padding", "Conv1d")
        given = padding
        k, d = _one(kernel_size, "kernel_size", "Conv1d"), _one(dilation, "dilation", "Conv1d")
        edges = None
        if padding_mode != "zeros":
            edges = time_padding(padding, k, d, _one(stride, "stride", "Conv1d"))
            padding = 0
        cfg = B.Conv1dConfig(
            int(in_channels),
            int(out_channels),
            _one(kernel_size, "kernel_size", "Conv1d"),
            _one(stride, "stride", "Conv1d"),
            padding,
            _one(dilation, "dilation", "Conv1d"),
            int(groups),
            bool(bias),
        )
        super().__init__(cfg, **block_args(device, dtype, generator))
        object.__setattr__(self, "edges", (padding_mode, edges) if edges else None)
        # torch's attributes are 1-tuples (``conv.kernel_size[0]``); the Config keeps ints
        c = self.config
        for name in ("kernel_size", "stride", "dilation"):
            object.__setattr__(self, name, (getattr(c, name),))
        object.__setattr__(self, "padding", given if isinstance(given, str) else (given,))
        object.__setattr__(self, "padding_mode", padding_mode)

    def forward(self, x):
        if self.edges:
            mode, (lo, hi) = self.edges
            lead = [0] * (x.ndim - 1)
            x = pad_by_index(x, [*lead, lo], [*lead, hi], mode)
        return _channels_last(super().forward, x)


def _pool_config(cls, layer, kernel_size, stride, padding):
    k = _one(kernel_size, "kernel_size", layer)
    s = _one(stride, "stride", layer) if stride is not None else None
    return cls(k, s, _one(padding, "padding", layer))


class MaxPool1d(B.MaxPool1d):
    """torch.nn.MaxPool1d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False) on [B, C, T]; dilation and ceil_mode take
    ``nn.functional``'s path, the rest the catalog block."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):  # fmt: skip
        cfg = _pool_config(B.MaxPool1dConfig, "MaxPool1d", kernel_size, stride, padding)
        super().__init__(cfg)
        extra = {"dilation": _one(dilation, "dilation", "MaxPool1d"), "ceil_mode": ceil_mode,
                 "return_indices": bool(return_indices)}  # fmt: skip
        object.__setattr__(self, "extra", extra if extra["dilation"] != 1 or ceil_mode
                           or return_indices else None)  # fmt: skip

    def forward(self, x):
        if self.extra:
            c = self.config
            return max_pool1d(x, c.kernel_size, c.stride, c.padding, **self.extra)
        return _channels_last(super().forward, x)


class AvgPool1d(B.AvgPool1d):
    """torch.nn.AvgPool1d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True) on [B, C, T]."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):  # fmt: skip
        cfg = _pool_config(B.AvgPool1dConfig, "AvgPool1d", kernel_size, stride, padding)
        super().__init__(cfg)
        extra = {"ceil_mode": ceil_mode, "count_include_pad": count_include_pad}
        object.__setattr__(self, "extra", extra if ceil_mode or not count_include_pad else None)

    def forward(self, x):
        if self.extra:
            c = self.config
            return avg_pool1d(x, c.kernel_size, c.stride, c.padding, **self.extra)
        return _channels_last(super().forward, x)


class _AdaptivePool1d(B.GlobalPool1d):
    """Pooling to one step is the catalog's global pool; other sizes take torch's
    adaptive windows (``nn.functional``'s)."""

    mode = "avg"

    def __init__(self, output_size):
        name = f"Adaptive{self.mode.capitalize()}Pool1d"
        super().__init__(B.GlobalPool1dConfig(self.mode))
        object.__setattr__(self, "output_size", _one(output_size, "output_size", name))

    def forward(self, x):  # [B, C, T] -> [B, C, output_size], as torch keeps the pooled axis
        if self.output_size != 1:
            return adaptive_pool(x, x.ndim - 1, self.output_size, self.mode)
        unbatched = x.ndim == 2
        xb = x.unsqueeze(0) if unbatched else x
        y = super().forward(xb.permute(0, 2, 1)).unsqueeze(-1)
        return y.squeeze(0) if unbatched else y


class AdaptiveAvgPool1d(_AdaptivePool1d):
    """torch.nn.AdaptiveAvgPool1d(output_size) on [B, C, T] or [C, T]."""

    mode = "avg"


class AdaptiveMaxPool1d(_AdaptivePool1d):
    """torch.nn.AdaptiveMaxPool1d(output_size) on [B, C, T] or [C, T]."""

    mode = "max"


class BatchNorm1d(B.BatchNorm1d):
    """torch.nn.BatchNorm1d(num_features, eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True) on [B, C] or [B, C, L]."""

    reset_parameters = _reset.affine

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None):  # fmt: skip
        if momentum is None:
            raise unsupported("momentum=None (a cumulative average)", "BatchNorm1d")
        cfg = B.BatchNorm1dConfig(
            int(num_features), float(eps), float(momentum), bool(affine), bool(track_running_stats)
        )
        super().__init__(cfg, **block_args(device, dtype))
        if cfg.track_running_stats:  # torch's count, kept so state dicts match key for key
            self.register_buffer("num_batches_tracked", full((), 0, "i32", self.ctx["device"]))

    def translate_state(self, state: dict) -> dict:
        return dict(state)  # torch's count is a buffer here too

    def reset_running_stats(self) -> None:
        if self.config.track_running_stats:
            with no_grad():
                for name, value in (("running_mean", 0), ("running_var", 1),
                                    ("num_batches_tracked", 0)):  # fmt: skip
                    getattr(self, name).fill_(value)

    def forward(self, x):
        if self.training and self.config.track_running_stats:
            with no_grad():
                write_into(self.num_batches_tracked, self.num_batches_tracked + 1)
        if x.ndim == 2:
            return super().forward(x)
        return super().forward(x.permute(0, 2, 1)).permute(0, 2, 1)
