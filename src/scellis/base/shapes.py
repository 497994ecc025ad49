"""Shape arithmetic (base layer): broadcasting, strides, axis normalisation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .errors import ShapeError

Shape = tuple[int, ...]


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return tuple(strides)


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    expect = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1 and st != expect:
            return False
        expect *= s
    return True


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    """NumPy broadcasting: align from the right, sizes equal or 1."""
    if len(shapes) == 2 and shapes[0] == shapes[1]:  # the common case, answered at once
        return tuple(shapes[0])
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, d in enumerate(s):
            j = ndim - len(s) + i
            if d == out[j] or d == 1:
                continue
            if out[j] == 1:
                out[j] = d
            else:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise ShapeError(f"shapes {shown} cannot be broadcast together")
    return tuple(out)


def norm_axis(axis: int, ndim: int) -> int:
    n = ndim if ndim > 1 else 1  # a 0-d tensor takes axis 0 and -1, as torch's does
    if not -n <= axis < n:
        raise ShapeError(f"axis {axis} is out of range for a tensor of {ndim} dims")
    return axis % n


def norm_axes(axes: int | Iterable[int] | None, ndim: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int):
        axes = (axes,)
    out = tuple(sorted({norm_axis(a, ndim) for a in axes}))
    return out


def reduction_axes(axes: int | Iterable[int] | None, ndim: int) -> tuple[int, ...]:
    """The axes a user's reduction names: None or an empty sequence means every axis, as
    in torch (``x.sum(())`` sums everything). Primitives keep ``norm_axes``, where ``()``
    reduces nothing."""
    if axes is not None and not isinstance(axes, int) and len(tuple(axes)) == 0:
        axes = None
    return norm_axes(axes, ndim)


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def infer_reshape(shape: Sequence[int], new: Sequence[int]) -> Shape:
    """Resolve one ``-1`` in ``new`` and check the element count."""
    new = list(new)
    n = numel(shape)
    if new.count(-1) > 1:
        raise ShapeError("reshape accepts at most one -1")
    if -1 in new:
        rest = numel([d for d in new if d != -1])
        if rest == 0 or n % rest:
            raise ShapeError(f"cannot reshape {tuple(shape)} to {tuple(new)}")
        new[new.index(-1)] = n // rest
    if numel(new) != n or any(d < 0 for d in new):
        raise ShapeError(f"cannot reshape {tuple(shape)} ({n} elements) to {tuple(new)}")
    return tuple(new)


def view_strides(shape: Sequence[int], strides: Sequence[int], new: Sequence[int]):
    """Strides that present ``shape/strides`` as ``new`` without a copy, or None.

    Walks the old dims from the right in chunks that are contiguous with respect to
    each other; each chunk must be covered exactly by a run of new dims (the rule that
    makes ``view`` of a transposed tensor need a copy).
    """
    if not shape or numel(shape) == 0:
        return contiguous_strides(new)
    out = [0] * len(new)
    vd = len(new) - 1
    base = strides[-1]
    t_numel = v_numel = 1
    for td in range(len(shape) - 1, -1, -1):
        t_numel *= shape[td]
        chunk_ends = td == 0 or (shape[td - 1] != 1 and strides[td - 1] != t_numel * base)
        if not chunk_ends:
            continue
        while vd >= 0 and (v_numel < t_numel or new[vd] == 1):
            out[vd] = v_numel * base
            v_numel *= new[vd]
            vd -= 1
        if v_numel != t_numel:
            return None
        if td > 0:
            base = strides[td - 1]
            t_numel = v_numel = 1
    if vd != -1:
        return None
    return tuple(out)
