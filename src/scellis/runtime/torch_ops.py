"""torch's selection and masking methods (runtime layer): a mixin of ``Tensor``.

``max``/``min`` over a dim, ``sort``, ``topk`` and ``kthvalue`` give torch's named pair
``(values, indices)``, so ``v, i = x.max(dim=1)`` unpacks as it does in torch;
``cumsum``, ``tril``/``triu``, ``masked_fill``, ``repeat``, ``gather(dim, index)`` and
``.data`` follow torch's signatures. The bodies are the composites of
``ops.selection``; indices are i32 (the engine has no 64-bit integers).
"""

from __future__ import annotations

from typing import NamedTuple

from ..ops import selection as S
from .primitive import apply_op
from .tensor_math import constant


class ValuesIndices(NamedTuple):
    """torch's ``return_types`` pair: unpacks as ``values, indices``."""

    values: object
    indices: object


class TorchOpsMethods:
    """torch-named selection methods; no state of its own."""

    __slots__ = ()

    def sort(self, dim=-1, descending=False, stable=False):
        return ValuesIndices(*S.sort(self, dim, descending))

    def argsort(self, dim=-1, descending=False, stable=False):
        return S.sort_order(self, dim, descending)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 (torch's name)
        return ValuesIndices(*S.topk(self, int(k), dim, largest, sorted))

    def kthvalue(self, k, dim=-1, keepdim=False):
        return ValuesIndices(*S.kthvalue(self, int(k), dim, keepdim))

    def cumsum(self, dim, dtype=None):
        out = S.cumsum(self, dim)
        return out.cast(dtype) if dtype is not None else out

    def tril(self, diagonal=0):
        return S.triangle(self, diagonal, upper=False)

    def triu(self, diagonal=0):
        return S.triangle(self, diagonal, upper=True)

    def masked_fill(self, mask, value):
        """``value`` where ``mask`` holds (broadcast), else ``self``."""
        # a Python value is the cached 0-d constant, broadcast by the select itself
        fill = value.cast(self.dtype) if hasattr(value, "_buf") else constant(value, self)
        return fill.where(mask, self)

    def masked_fill_(self, mask, value):
        return self._assign(self.masked_fill(mask, value), "masked_fill_")

    def repeat(self, *sizes):
        dims = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
        return S.repeat(self, dims)

    def gather(self, *args, **kwargs):
        """torch's ``gather(dim, index)``; the engine's own ``gather(index, axis)`` order
        is still taken (an int first is a dim, a tensor first an index)."""
        if args and isinstance(args[0], int) and not hasattr(args[0], "_buf"):
            dim, index = args[0], (args[1] if len(args) > 1 else kwargs.pop("index"))
        elif "dim" in kwargs:
            dim, index = kwargs.pop("dim"), (args[0] if args else kwargs.pop("index"))
        else:
            index, dim = args[0], (args[1] if len(args) > 1 else kwargs.pop("axis"))
        if index.dtype.name != "i32":
            index = index.cast("i32")
        return apply_op("gather", (self, index), axis=dim % self.ndim)

    @property
    def data(self):
        """The same storage outside autograd (torch's ``.data``): writes through it are
        not seen by backward, as in torch."""
        return self.detach()

    @data.setter
    def data(self, value):
        """``p.data = t``: this tensor now holds ``t``'s storage (shape included)."""
        self._buf, self.shape, self.strides = value._buf, value.shape, value.strides
        self.offset, self.dtype, self.device = value.offset, value.dtype, value.device
