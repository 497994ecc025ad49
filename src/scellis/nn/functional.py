"""torch.nn.functional's basics (nn layer), mapped onto the engine's composites.

Arguments follow torch: ``dim=``, ``reduction=``, and ``cross_entropy`` takes the
classes on axis 1 (``[N, C]`` or ``[N, C, d1, ...]``), moved last for the composite.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.blocks.common import dense
from ..catalog.blocks.conv import time_padding
from ..ops import composites as C
from ..runtime import functional as RF
from ..runtime.tensor import Tensor


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.relu()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    return C.gelu(x, approximate)


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.silu()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def softplus(x: Tensor) -> Tensor:
    return x.softplus()


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return C.softmax(x, dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return C.log_softmax(x, dim)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    return dense(x, weight, bias)


def embedding(idx: Tensor, weight: Tensor) -> Tensor:
    return C.take(weight, idx, 0)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    n = normalized_shape if isinstance(normalized_shape, int) else tuple(normalized_shape)[-1]
    return C.layer_norm(x, n, weight, bias, eps)


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return RF.dropout(x, p, training)


def _over_time(fn, x: Tensor) -> Tensor:
    """``fn`` (a composite over [B, T, C]) applied to torch's [B, C, T] or [C, T]."""
    unbatched = x.ndim == 2
    xb = x.unsqueeze(0) if unbatched else x
    y = fn(xb.permute(0, 2, 1)).permute(0, 2, 1)
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """torch's F.conv1d on [B, C_in, T] with ``weight`` [C_out, C_in/groups, k]; ``padding``
    an int, 'valid', 'same' or 'causal'."""
    lo, hi = time_padding(padding, weight.shape[2], dilation, stride)
    return _over_time(lambda x: C.conv1d(x, weight, bias, stride, lo, hi, dilation, groups), input)


def max_pool1d(input, kernel_size, stride=None, padding=0) -> Tensor:
    s = stride or kernel_size
    return _over_time(lambda x: C.max_pool1d(x, kernel_size, s, padding, padding), input)


def avg_pool1d(input, kernel_size, stride=None, padding=0) -> Tensor:
    s = stride or kernel_size
    return _over_time(lambda x: C.avg_pool1d(x, kernel_size, s, padding, padding), input)


def _classes_last(x: Tensor) -> Tensor:
    return x if x.ndim <= 2 else x.permute(0, *range(2, x.ndim), 1)


def cross_entropy(input, target, weight=None, ignore_index: int = -100, reduction="mean",
                  label_smoothing: float = 0.0) -> Tensor:  # fmt: skip
    if weight is not None:
        raise ScellisError("cross_entropy: class weights are not supported yet")
    return C.cross_entropy(_classes_last(input), target, label_smoothing, ignore_index, reduction)


def nll_loss(input, target, ignore_index: int = -100, reduction="mean") -> Tensor:
    return C.nll_loss(_classes_last(input), target, ignore_index, reduction)


def mse_loss(input, target, reduction="mean") -> Tensor:
    return C.mse(input, target, reduction)


def l1_loss(input, target, reduction="mean") -> Tensor:
    return C.l1(input, target, reduction)


def huber_loss(input, target, reduction="mean", delta: float = 1.0) -> Tensor:
    return C.huber(input, target, delta, reduction)


def binary_cross_entropy_with_logits(input, target, reduction="mean") -> Tensor:
    return C.bce_with_logits(input, target, reduction)
