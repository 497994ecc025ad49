"""torch.nn.functional's basics (nn layer), mapped onto the engine's composites.

Arguments follow torch: ``dim=``, ``reduction=``, and ``cross_entropy`` takes the
classes on axis 1 (``[N, C]`` or ``[N, C, d1, ...]``), moved last for the composite.
"""

from __future__ import annotations

import math

from ..autograd.mode import no_grad
from ..base.errors import ScellisError
from ..catalog.blocks.common import dense
from ..catalog.blocks.conv import time_padding
from ..catalog.blocks.image_ops import (  # noqa: F401
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool2d,
    conv2d,
    conv_transpose1d,
    conv_transpose2d,
    fold,
    max_pool2d,
    pixel_shuffle,
    pixel_unshuffle,
    unfold,
)
from ..ops import composites as C
from ..runtime import functional as RF
from ..runtime.tensor import Tensor
from ._activations import (  # noqa: F401
    celu,
    elu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu6,
    selu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
)
from ._inplace import honours_inplace
from ._losses import (  # noqa: F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cosine_similarity,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    legacy_reduction,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    pairwise_distance,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from ._missing import FUNCTIONS, refuse
from ._resample import interpolate, pad_by_index, upsample  # noqa: F401
from ._sampling import affine_grid, grid_sample  # noqa: F401
from .norms import (  # noqa: F401
    batch_norm,
    dropout1d,
    dropout2d,
    dropout3d,
    group_norm,
    instance_norm,
)
from .pairwise import bilinear  # noqa: F401
from .unpool import max_unpool1d, max_unpool2d  # noqa: F401


@honours_inplace
def relu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.relu()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    return C.gelu(x, approximate)


@honours_inplace
def silu(x: Tensor, inplace: bool = False) -> Tensor:
    return x.silu()


def tanh(x: Tensor) -> Tensor:
    return x.tanh()


def sigmoid(x: Tensor) -> Tensor:
    return x.sigmoid()


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    return dense(x, weight, bias)


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:  # fmt: skip
    """Rows of ``weight``; the ``padding_idx`` row reads its value but passes no gradient
    back (torch's rule). With ``max_norm``, the rows looked up are first shrunk in place
    to that norm, as torch does."""
    if scale_grad_by_freq or sparse:
        raise ScellisError("F.embedding: scale_grad_by_freq and sparse are not supported")
    if max_norm is not None:
        renorm_rows_(weight, input, max_norm, norm_type)
    out = C.take(weight, input, 0)
    if padding_idx is None:
        return out
    pad = padding_idx % weight.shape[0]
    return out.where((input != pad).unsqueeze(-1), C.take(weight.detach(), input, 0))


def renorm_rows_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float = 2.0):
    """torch's ``embedding_renorm_``: each row of ``weight`` that ``input`` names and whose
    ``norm_type`` norm exceeds ``max_norm`` is scaled to ``max_norm / (norm + 1e-7)`` of
    itself, in place and outside autograd (the lookup then reads the new rows)."""
    idx = input.reshape((-1,))
    with no_grad():
        rows = C.take(weight, idx, 0)
        norms = rows.norm(p=float(norm_type), dim=1, keepdim=True)
        scale = (float(max_norm) / (norms + 1e-7)).where(norms > float(max_norm), 1.0)
        weight[idx] = rows * scale


def layer_norm(x, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalised over the trailing axes ``normalized_shape`` names (seen as one axis)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) == 1:
        return C.layer_norm(x, shape[0], weight, bias, eps)
    if tuple(x.shape[x.ndim - len(shape) :]) != tuple(shape):
        raise ScellisError(f"layer_norm over {shape}: the input's trailing axes are {x.shape}")
    n = 1
    for d in shape:
        n *= d
    flat = x.reshape(*x.shape[: x.ndim - len(shape)], n)
    w = weight.reshape(n) if weight is not None else None
    b = bias.reshape(n) if bias is not None else None
    return C.layer_norm(flat, n, w, b, eps).reshape(x.shape)


@honours_inplace
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


def _one(v) -> int:
    return int(v[0]) if isinstance(v, (tuple, list)) else int(v)


def _as_2d(fn, input, kernel_size, stride, padding, **options):
    """A 1-d pool as the 2-d one over a height of 1 (dilation, ceil_mode and the
    other options the time-major composites do not take)."""
    stride = kernel_size if stride in (None, ()) else stride
    y = fn(input.unsqueeze(-2), (1, _one(kernel_size)), (1, _one(stride)), (0, _one(padding)),
           **options)  # fmt: skip
    if isinstance(y, tuple):  # values and indices (an index over a height of 1 is in time)
        return tuple(t.squeeze(-2) for t in y)
    return y.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Tensor:  # fmt: skip
    if _one(dilation) != 1 or ceil_mode or return_indices:
        return _as_2d(max_pool2d, input, kernel_size, stride, padding,
                      dilation=(1, _one(dilation)), ceil_mode=ceil_mode,
                      return_indices=return_indices)  # fmt: skip
    k, p = _one(kernel_size), _one(padding)
    s = _one(stride) if stride not in (None, ()) else k
    return _over_time(lambda x: C.max_pool1d(x, k, s, p, p), input)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True) -> Tensor:  # fmt: skip
    if ceil_mode or not count_include_pad:
        return _as_2d(avg_pool2d, input, kernel_size, stride, padding, ceil_mode=ceil_mode,
                      count_include_pad=count_include_pad)  # fmt: skip
    k, p = _one(kernel_size), _one(padding)
    s = _one(stride) if stride not in (None, ()) else k
    return _over_time(lambda x: C.avg_pool1d(x, k, s, p, p), input)


def _classes_last(x: Tensor) -> Tensor:
    return x if x.ndim <= 2 else x.permute(0, *range(2, x.ndim), 1)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction="mean",
                  label_smoothing: float = 0.0) -> Tensor:  # fmt: skip
    reduction = legacy_reduction(size_average, reduce, reduction)
    logits = _classes_last(input)
    if target.dtype.kind == "f" and tuple(target.shape) == tuple(input.shape):
        return soft_cross_entropy(logits, _classes_last(target), weight, reduction,
                                  label_smoothing)  # fmt: skip
    if weight is None:
        return C.cross_entropy(logits, target, label_smoothing, ignore_index, reduction)
    return weighted_cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing)


@honours_inplace
def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    from .layers import LeakyReLU  # one definition: the module's

    return LeakyReLU(negative_slope)(input)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """i32 one-hot rows (torch's int64); ``num_classes=-1`` reads the largest index."""
    if num_classes < 0:
        num_classes = int(tensor.amax().item()) + 1
    return C.one_hot(tensor, num_classes, "i32")


def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """torch's F.pad: ``pad`` lists (before, after) pairs from the last dim backwards;
    modes 'constant', 'reflect', 'replicate' and 'circular'."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ScellisError(f"F.pad: mode {mode!r} is not one of constant, reflect, replicate, "
                           "circular")  # fmt: skip
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ScellisError(f"F.pad: pad needs (before, after) pairs for at most {input.ndim} dims")
    lo, hi = [0] * input.ndim, [0] * input.ndim
    for i in range(len(pad) // 2):
        lo[input.ndim - 1 - i], hi[input.ndim - 1 - i] = int(pad[2 * i]), int(pad[2 * i + 1])
    if min(lo + hi) < 0:
        raise ScellisError("F.pad: negative padding (cropping) is not supported; slice instead")
    if mode != "constant":
        return pad_by_index(input, lo, hi, mode)
    return input.pad(lo, hi, None, 0.0 if value is None else value)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its p-norm along ``dim`` (at least ``eps``)."""
    if p == 2.0:
        norm = input.square().sum(dim, keepdim=True).sqrt()
    elif p == 1.0:
        norm = input.abs().sum(dim, keepdim=True)
    else:
        norm = (input.abs() ** float(p)).sum(dim, keepdim=True) ** (1.0 / p)
    return input / norm.clamp(eps, None)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False) -> Tensor:  # fmt: skip
    """torch's SDPA: softmax(q kᵀ · scale + mask) v over [.., L, E] and [.., S, E]. A
    bool mask keeps where True; a float mask is added to the scores."""
    L, S = query.shape[-2], key.shape[-2]
    s = float(scale) if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key.transpose(-2, -1)) * s
    if is_causal:
        keep = query.new_ones((L, S), dtype="bool").tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype.kind == "b":
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    w = C.softmax(scores, -1)
    if dropout_p > 0.0:
        w = RF.dropout(w, dropout_p, True)
    return w @ value


def soft_cross_entropy(logits, probs, weight=None, reduction="mean",
                       label_smoothing: float = 0.0) -> Tensor:  # fmt: skip
    """torch's cross entropy against class probabilities (classes last): -sum_c w_c p_c
    log q_c per row, the mean over rows (not divided by the weights, as torch)."""
    n_cls = logits.shape[-1]
    if label_smoothing:
        probs = probs * (1.0 - label_smoothing) + label_smoothing / n_cls
    terms = C.log_softmax(logits, -1) * probs
    if weight is not None:
        terms = terms * weight
    loss = -terms.sum(-1)
    if reduction == "mean":
        return loss.sum() * (1.0 / max(loss.numel, 1))
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ScellisError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def weighted_cross_entropy(logits, target, weight, ignore_index=-100, reduction="mean",
                           label_smoothing: float = 0.0) -> Tensor:  # fmt: skip
    """torch's class-weighted cross entropy over classes last ([N, C] or [N, .., C]):
    each term weighted by its target's weight, the mean divided by the weights' sum."""
    n_cls = logits.shape[-1]
    logp = C.log_softmax(logits, -1)
    valid = target != ignore_index
    t = target.cast("i32").where(valid, 0)
    w_t = weight.take(t, 0) * valid.cast(logp.dtype)
    picked = logp.gather(t.unsqueeze(-1), -1).squeeze(-1)
    loss = -(picked * w_t)
    if label_smoothing:
        smooth = -(logp * weight).sum(-1) * valid.cast(logp.dtype) / n_cls
        loss = loss * (1.0 - label_smoothing) + smooth * label_smoothing
    if reduction == "mean":
        return loss.sum() / w_t.sum()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ScellisError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def __getattr__(name: str):
    """A torch.nn.functional name not provided here: one clear error naming the way."""
    raise refuse("nn.functional", name, FUNCTIONS)
