"""Flat parameter buffers (catalog layer): parameters as views into one buffer per group.

An optimizer step is one fused dispatch over a whole parameter group, which needs
the group's parameters to be consecutive ranges of one flat buffer. ``flatten_parameters``
copies tensors into such a buffer (one ``concat``) and returns views of it;
``flat_view`` recognises tensors that already are such views.
"""

from __future__ import annotations

from ...autograd import no_grad
from ...base.errors import ScellisError
from ...base.shapes import contiguous_strides
from ...runtime.dispatch import apply
from ...runtime.tensor import Tensor


def span(t: Tensor, start: int, stop: int) -> Tensor:
    """Elements ``start:stop`` of the 1-D contiguous ``t`` as a view (no tape, no dispatch)."""
    return Tensor(t._buf, (stop - start,), (1,), t.offset + start, t.dtype, t.device)


def view_of(flat: Tensor, start: int, shape) -> Tensor:
    """A contiguous tensor of ``shape`` over ``flat``'s buffer from element ``start``."""
    shape = tuple(shape)
    return Tensor(
        flat._buf, shape, contiguous_strides(shape), flat.offset + start, flat.dtype, flat.device
    )


def flat_view(tensors) -> Tensor | None:
    """The 1-D tensor spanning ``tensors`` when they are consecutive contiguous ranges of
    one buffer, in order; else None."""
    tensors = list(tensors)
    if not tensors:
        return None
    first = tensors[0]
    at = first.offset
    for t in tensors:
        same = t._buf is first._buf and t.dtype == first.dtype and t.device is first.device
        if not same or not t.is_contiguous() or t.offset != at:
            return None
        at += t.numel
    return Tensor(first._buf, (at - first.offset,), (1,), first.offset, first.dtype, first.device)


def _check(tensors: list[Tensor]) -> None:
    if not tensors:
        raise ScellisError("an optimizer needs at least one parameter")
    first = tensors[0]
    for t in tensors:
        if t.device is not first.device or t.dtype != first.dtype:
            raise ScellisError(
                f"one parameter group lives on one device in one dtype; got {first.dtype} on "
                f"{first.device.name} and {t.dtype} on {t.device.name}"
            )
    if first.dtype.name not in ("f32", "f64"):
        raise ScellisError(f"optimizers keep f32 master weights; got a {first.dtype} parameter")


def flatten_parameters(params) -> list[Tensor]:
    """Copy ``params`` into one new flat buffer; return tensors viewing it, in order.

    The returned tensors have the shapes of ``params`` and ``requires_grad`` set; put
    them back where the old ones lived (``Module.set_parameter``). The buffer itself is
    ``flat_view(result)``.
    """
    params = list(params)
    _check(params)
    with no_grad():
        parts = [p.detach().reshape((-1,)) for p in params]
        flat = (
            apply("copy", (parts[0],)) if len(parts) == 1 else apply("concat", tuple(parts), axis=0)
        )
    views, at = [], 0
    for p in params:
        v = view_of(flat, at, p.shape)
        v.requires_grad = True
        views.append(v)
        at += p.numel
    return views


def adopt(tensor: Tensor, view: Tensor) -> None:
    """Point ``tensor`` itself at ``view``'s storage, so every holder of the object (a
    module attribute, the caller's variable) sees the optimizer's updates in place.

    Only for leaves: a tensor with a tape node would change under that node's feet.
    """
    if tensor._node is not None:
        raise ScellisError("only leaf tensors can be optimized")
    tensor._buf, tensor.strides, tensor.offset = view._buf, view.strides, view.offset


def flatten_in_place(params: list[Tensor]) -> Tensor:
    """Copy ``params`` into one flat buffer and point each parameter object at its span
    (the objects stay: whoever holds them sees the optimizer's updates); the buffer."""
    for p, view in zip(params, flatten_parameters(params)):
        adopt(p, view)
    return flat_view(params)
