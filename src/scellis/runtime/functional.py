"""Functional API (runtime layer): free functions over tensors, torch.nn.functional-like."""

from __future__ import annotations

import struct

from ..base.dtypes import promote
from ..base.errors import ScellisError
from ..devices.kernel_choice import current as kernel_choice
from ..ops import composites as C
from .creation import full, generator
from .dispatch import apply
from .tensor import Tensor

softmax, log_softmax, logsumexp, layer_norm, gelu = (
    C.softmax,
    C.log_softmax,
    C.logsumexp,
    C.layer_norm,
    C.gelu,
)
one_hot, take = C.one_hot, C.take
cross_entropy, nll_loss, mse_loss, l1_loss, huber_loss = (
    C.cross_entropy,
    C.nll_loss,
    C.mse,
    C.l1,
    C.huber,
)
binary_cross_entropy_with_logits = C.bce_with_logits
mean, var = C.mean, C.var


def where(cond: Tensor, a=None, b=None) -> Tensor:
    """``a`` where ``cond`` holds, else ``b``; with ``cond`` alone, torch's
    ``nonzero(as_tuple=True)``: one index tensor per dim."""
    if a is None and b is None:
        return cond.nonzero(as_tuple=True)
    if isinstance(a, Tensor):
        return a.where(cond, b)
    if isinstance(b, Tensor):
        return b.where(cond.logical_not(), a)
    if not all(isinstance(v, (bool, int, float)) for v in (a, b)):
        raise ScellisError("where takes tensors or Python numbers as its branches")
    # two numbers (``torch.where(mask, 1, -1)``): a tensor of cond's shape in the dtype
    # torch gives them, float if either is, else integer, else bool
    kind = "f32" if float in (type(a), type(b)) else "bool" if bool is type(a) is type(b) else "i32"
    return full(cond.shape, a, kind, cond.device).where(cond, b)


def maximum(a, b):
    return a.maximum(b) if isinstance(a, Tensor) else b.maximum(a)


def minimum(a, b):
    return a.minimum(b) if isinstance(a, Tensor) else b.minimum(a)


def _one_dtype(xs: list, of: list | None = None) -> list:
    """``xs`` cast to the common dtype of ``of`` (default ``xs``): torch promotes
    ``cat([ints, floats])``."""
    of = of or xs
    common = of[0].dtype
    for x in of[1:]:
        common = promote(common, x.dtype)
    return [x if x.dtype == common else x.cast(common) for x in xs]


def concat(xs, axis=0, *, dim=None) -> Tensor:
    """Join ``xs`` along ``axis`` (torch's ``cat(tensors, dim)``): dtypes promoted, and
    an empty 1-d tensor skipped beside others, as torch's (``torch.cat([acc, batch])``
    from ``acc = torch.tensor([])``)."""
    xs = list(xs)
    if not xs:
        raise ScellisError("concat needs at least one tensor")
    kept = [x for x in xs if tuple(x.shape) != (0,)] or xs[:1]
    kept = _one_dtype(kept, xs)  # the skipped empty ones' dtypes count, as in torch
    return kept[0].cat(kept[1:], axis if dim is None else dim)


cat = concat


def stack(xs, axis=0, *, dim=None) -> Tensor:
    """``xs`` along a new axis (torch's ``stack(tensors, dim)``)."""
    xs = list(xs)
    return C.stack(_one_dtype(xs) if xs else xs, axis if dim is None else dim)


def embedding(idx: Tensor, weight: Tensor) -> Tensor:
    return C.take(weight, idx, 0)


def relu(x):
    return x.relu()


def silu(x):
    return x.silu()


def sigmoid(x):
    return x.sigmoid()


def tanh(x):
    return x.tanh()


def softplus(x):
    return x.softplus()


def dropout(x: Tensor, p: float = 0.5, training: bool = True, gen=None) -> Tensor:
    """Inverted dropout with a Philox mask from the ``dropout`` stream (or ``gen``)."""
    if not 0.0 <= p < 1.0:
        raise ScellisError(f"dropout probability must lie in [0, 1), got {p}")
    if not training or p == 0.0:
        return x
    g = gen or generator("dropout")
    key, draw, step = g.next_draw()
    mask = apply(
        "bernoulli", (), device=x.device, shape=x.shape, key=key, draw=draw, step=step, keep=1.0 - p
    )
    if kernel_choice().fuses("dropout") and x.dtype.is_float:
        return x.prim("masked_scale", mask, scale=_stored(1.0 / (1.0 - p), x.dtype))
    return C.dropout(x, p, mask)


def _stored(value: float, dtype) -> float:
    """``value`` rounded to ``dtype``, as the unfused dropout's scalar operand stores it:
    the fused kernel then multiplies by the same number."""
    return struct.unpack(dtype.code, struct.pack(dtype.code, value))[0]


def pad(x: Tensor, lo, hi, value=0.0) -> Tensor:
    return x.pad(lo, hi, None, value)


def matmul(a, b):
    return a @ b
