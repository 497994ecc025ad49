"""torch.nn's max unpooling (nn layer): ``MaxUnpool1d/2d`` and ``F.max_unpool1d/2d``.

The inverse of a max pool that returned its indices: each pooled value written back at
its index into a zero plane per (sample, channel), of torch's default size ``(in - 1) *
stride - 2 * padding + kernel`` per axis unless ``output_size`` says otherwise. As in
torch, each value's gradient is the output's gradient gathered at its index, also where
overlapping windows gave two values the same index (a scatter's own VJP would credit
one of them).
"""

from __future__ import annotations

from ..autograd import Function
from ..base.errors import ShapeError
from ..catalog.blocks.image_ops import pair
from ..catalog.module import Module


class _Unpool(Function):
    @staticmethod
    def forward(ctx, values, index, size: int):
        ctx.index = index
        B, ch, _ = values.shape
        return values.new_zeros(B, ch, size).scatter(2, index, values)

    @staticmethod
    def backward(ctx, g):
        return g.gather(2, ctx.index), None, None


def _size(in_hw, k, s, p, output_size) -> tuple[int, int]:
    if output_size is not None:
        return tuple(int(n) for n in tuple(output_size)[-2:])
    return tuple((in_hw[a] - 1) * s[a] - 2 * p[a] + k[a] for a in (0, 1))


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    k = pair(kernel_size, "kernel_size")
    s = pair(stride if stride not in (None, ()) else kernel_size, "stride")
    p = pair(padding, "padding")
    if tuple(indices.shape) != tuple(input.shape) or input.ndim not in (3, 4):
        raise ShapeError(f"max_unpool2d: indices {indices.shape} must match the input "
                         f"{input.shape}, [B, C, H, W] or [C, H, W]")  # fmt: skip
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    idx = indices.unsqueeze(0) if unbatched else indices
    B, ch = x.shape[0], x.shape[1]
    ho, wo = _size(x.shape[2:], k, s, p, output_size)
    flat = _Unpool.apply(x.reshape(B, ch, -1), idx.reshape(B, ch, -1), ho * wo)
    y = flat.reshape(B, ch, ho, wo)
    return y.squeeze(0) if unbatched else y


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The 2-d unpool over a height of 1 (a 1-d pool's index is its position in time)."""
    k = pair(kernel_size)[0]
    s = pair(stride)[0] if stride not in (None, ()) else k
    size = None if output_size is None else (1, int(tuple(output_size)[-1]))
    y = max_unpool2d(input.unsqueeze(-2), indices.unsqueeze(-2), (1, k), (1, s),
                     (0, pair(padding)[0]), size)  # fmt: skip
    return y.squeeze(-2)


class MaxUnpool2d(Module):
    """torch.nn.MaxUnpool2d(kernel_size, stride=None, padding=0)."""

    unpool = staticmethod(max_unpool2d)

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding

    def forward(self, input, indices, output_size=None):
        return self.unpool(input, indices, self.kernel_size, self.stride, self.padding,
                           output_size)  # fmt: skip


class MaxUnpool1d(MaxUnpool2d):
    """torch.nn.MaxUnpool1d(kernel_size, stride=None, padding=0)."""

    unpool = staticmethod(max_unpool1d)
