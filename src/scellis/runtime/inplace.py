"""Changing a tensor's values or home without changing the object (runtime layer).

Whoever holds a tensor (a module attribute, an optimizer's parameter list, the
caller's variable) keeps seeing it after a load, a move or an in-place op: values are
written into the existing storage where they can be, and otherwise the object is
pointed at new storage. Both keep ``requires_grad`` and the object's identity.
"""

from __future__ import annotations

from ..base.dtypes import DType, as_dtype
from ..base.errors import ScellisError
from ..base.shapes import contiguous_strides
from ..devices.base import get_device
from .creation import from_bytes, tensor
from .dispatch import apply, apply_inplace
from .tensor import Tensor, run_sync


def transfer(t: Tensor, device=None, dtype: DType | str | None = None) -> Tensor:
    """A copy of ``t`` on ``device`` in ``dtype`` (either may be None: unchanged); ``t``
    itself when nothing changes. Another device is reached through host bytes."""
    dev = get_device(device) if device is not None else t.device
    dt = as_dtype(dtype) if dtype is not None else t.dtype
    out = t
    if dev is not t.device:
        out = from_bytes(host_bytes(t), t.shape, t.dtype, dev)
    if dt != out.dtype:
        out = out.cast(dt)
    return out


def host_bytes(t: Tensor) -> bytes:
    """``t``'s values in C order, in its dtype's host layout (one readback)."""
    return run_sync(t.read_bytes())


def rebind(t: Tensor, new: Tensor) -> None:
    """Point ``t`` at ``new``'s storage, device and dtype (same shape; grad dropped when
    it no longer matches)."""
    if tuple(new.shape) != tuple(t.shape):
        raise ScellisError(f"cannot rebind a {t.shape} tensor to {new.shape} storage")
    t._buf, t.strides, t.offset = new._buf, new.strides, new.offset
    if t.grad is not None and (t.grad.device is not new.device or t.grad.dtype != new.dtype):
        t.grad = transfer(t.grad, new.device, new.dtype)
    t.device, t.dtype = new.device, new.dtype


def write_into(target: Tensor, value) -> None:
    """Overwrite ``target``'s values with ``value`` (a tensor, nested lists or a number,
    broadcast to ``target``'s shape), keeping ``target``'s device and dtype.

    A contiguous float target is written in place, so views of the same buffer (an
    optimizer's flat parameter buffer) see the new values; any other target is
    rebound to fresh storage."""
    if isinstance(value, Tensor):
        src = transfer(value.detach(), target.device, target.dtype)
    else:
        src = tensor(value, device=target.device, dtype=target.dtype)
    if tuple(src.shape) != tuple(target.shape):
        try:
            src = src.expand(target.shape)
        except ScellisError:
            raise ScellisError(
                f"values of shape {tuple(src.shape)} do not fit a tensor of shape "
                f"{tuple(target.shape)}"
            ) from None
    flat = apply("copy", (src,)).reshape((-1,))
    if target.dtype.is_float and target.is_contiguous() and target.numel:
        dest = Tensor(
            target._buf, (target.numel,), (1,), target.offset, target.dtype, target.device
        )
        apply_inplace("flat_gather", (flat,), (dest,))
        return
    shape = tuple(target.shape)
    rebind(target, Tensor(flat._buf, shape, contiguous_strides(shape), 0, flat.dtype, flat.device))
