"""torch's indexing beyond views, and writes through an index (runtime layer).

A mixin of ``Tensor``, before ``TensorShape`` so its ``__getitem__`` sees a key first:
a bool mask (``x[x > 0]``; the result's length depends on the data, so the mask is
read back, as torch synchronises there too), a list of ints, or several integer
tensors on adjacent dims (``logits[torch.arange(n), y]``: torch's paired indices, not
an outer product). Anything else is ``TensorShape``'s view indexing.

``x[key] = value`` builds the updated tensor (``where`` over a mask of the indexed
places) and hands it to ``_assign``, the one in-place write: in place when autograd
does not track ``x``, recorded on the tape when ``x`` is an intermediate, refused on
a leaf that requires grad, as in torch. The in-place operators (``+=``, ``-=``,
``*=``, ``/=``) go the same way, so ``p -= lr * p.grad`` inside ``no_grad`` changes
``p`` itself.
"""

from __future__ import annotations

from ..base.errors import ShapeError
from ..ops.movement import slice_len


def _is_tensor(k) -> bool:
    return hasattr(k, "_buf")


def _is_bool_list(k) -> bool:
    return isinstance(k, list) and bool(k) and all(isinstance(v, bool) for v in k)


class TorchIndexMethods:
    """``__getitem__`` for masks, lists and paired indices; ``__setitem__``; ``+=``..."""

    __slots__ = ()

    def _as_index(self, k):
        """A list key (or a NumPy array of indices or a mask) as a tensor on this
        device (bool or i32), a NumPy integer as an int; others unchanged."""
        if hasattr(k, "__array_interface__") and not _is_tensor(k):
            k = k.tolist()  # np.int64(3) -> 3, an index array -> a list
        if isinstance(k, list):
            dt = "bool" if _is_bool_list(k) else "i32"
            return self._tensor_of(k, dt)
        return k

    def _array_operand(self, a):
        """A NumPy operand of arithmetic (``x + arr``): a 0-d one as its number, else a
        tensor of its values and dtype, as torch takes it."""
        if getattr(a, "ndim", 0) == 0:
            return a.item()
        from .creation import tensor  # creation sits above the tensor class

        return tensor(a, device=self.device)

    def _tensor_of(self, values, dtype):
        from .creation import tensor  # creation sits above the tensor class

        return tensor(values, device=self.device, dtype=dtype)

    def __getitem__(self, key):
        keys = tuple(self._as_index(k) for k in (key if isinstance(key, tuple) else (key,)))
        tensors = [i for i, k in enumerate(keys) if _is_tensor(k)]
        if any(keys[i].dtype.kind == "b" for i in tensors):
            if len(keys) == 1:
                return self._masked_select(keys[0])
            return self[self._mask_as_indices(keys, tensors)]
        if len(tensors) > 1:
            return self._paired(keys, tensors)
        return super().__getitem__(keys if isinstance(key, tuple) else keys[0])

    def _masked_select(self, mask):
        """The elements where ``mask`` (over the leading dims) holds, in order."""
        lead = tuple(mask.shape)
        if lead != tuple(self.shape[: len(lead)]):
            raise ShapeError(f"mask of shape {lead} does not fit a tensor of shape {self.shape}")
        flat = mask.reshape((-1,)).tolist()
        picks = self._tensor_of([i for i, m in enumerate(flat) if m], "i32")
        rows = self.reshape((len(flat),) + tuple(self.shape[len(lead) :]))
        return rows.take(picks, 0)

    def _mask_as_indices(self, keys, tensors) -> tuple:
        """``x[:, mask]``: a bool mask among whole slices stands for its nonzero
        positions, one index tensor per dim it covers (torch's rule; read back, as
        torch synchronises there too)."""
        if len(tensors) != 1:
            raise ShapeError("a bool mask index takes no other tensor index beside it")
        j = tensors[0]
        return keys[:j] + tuple(keys[j].nonzero(as_tuple=True)) + keys[j + 1 :]

    def index_put(self, indices, values, accumulate=False):
        """torch's ``index_put``: ``self`` with ``values`` at the places the index
        tensors name (paired, on the leading dims); ``accumulate`` adds them instead,
        repeated places summed (a confusion matrix from label pairs)."""
        keys = tuple(self._as_index(k) for k in indices)
        if not accumulate:
            out = self.clone()
            out[keys] = values
            return out
        _, end, flat = self._flat_index(keys, list(range(len(keys))))
        rest = tuple(self.shape[end:])
        rows = self.reshape((_count(self.shape[:end]),) + rest)
        vals = values.expand(tuple(flat.shape) + rest).reshape((-1,) + rest)
        return rows.index_add(0, flat.reshape((-1,)), vals).reshape(self.shape)

    def _paired(self, keys, tensors):
        """Integer tensors on adjacent dims, the other dims whole: torch's paired
        (broadcast) indices, one flat index into those dims."""
        a, b, flat = self._flat_index(keys, tensors)
        rows = self.reshape(self.shape[:a] + (_count(self.shape[a:b]),) + self.shape[b:])
        return rows.take(flat, a)

    def _flat_index(self, keys, tensors):
        """(first dim, end dim, one flat i32 index into dims [first, end)) of integer
        index tensors on adjacent dims, every other key a whole slice."""
        if tensors != list(range(tensors[0], tensors[-1] + 1)) or any(
            not (isinstance(k, slice) and k == slice(None))
            for i, k in enumerate(keys)
            if i not in tensors
        ):
            raise ShapeError(
                "several tensor indices are taken on adjacent dims with the others "
                "whole (x[:, i, j]); index in steps otherwise"
            )
        a, b = tensors[0], tensors[-1] + 1
        sizes = self.shape[a:b]
        flat, scale = None, 1
        for d in reversed(range(a, b)):
            idx = keys[d].cast("i32")
            idx = idx.where(idx >= 0, idx + sizes[d - a])  # negative counts from the end
            term = idx * scale if scale != 1 else idx
            flat = term if flat is None else flat + term
            scale *= sizes[d - a]
        return a, b, flat

    # -- writes --
    def __setitem__(self, key, value):
        keys = tuple(self._as_index(k) for k in (key if isinstance(key, tuple) else (key,)))
        if any(_is_tensor(k) for k in keys):
            new = (
                self._set_by_tensor(keys[0], value)
                if len(keys) == 1
                else self._set_by_paired(keys, value)
            )
        else:
            new = self._set_by_view(keys, value)
        if new is not None:
            self._assign(new, "index assignment")

    def _value(self, value, shape):
        v = value if _is_tensor(value) else self.new_full((), value)
        v = v.cast(self.dtype) if v.dtype != self.dtype else v
        try:
            return v.expand(tuple(shape)) if tuple(v.shape) != tuple(shape) else v
        except ShapeError:
            raise ShapeError(
                f"value of shape {tuple(v.shape)} does not fit the {tuple(shape)} indexed"
            ) from None

    def _set_by_view(self, keys, value):
        """Ints, slices, None and Ellipsis: pad the value out to the whole shape and
        pick it where a padded mask of ones says."""
        region = super().__getitem__(keys)
        plan = _placement(self.shape, keys)
        counts = tuple(c for _, _, c in plan)
        if 0 in counts:
            return None
        v = self._value(value, region.shape).reshape(counts)
        lo = tuple(a for a, _, _ in plan)
        hi = tuple(n - (a + (c - 1) * s + 1) for n, (a, s, c) in zip(self.shape, plan))
        gaps = tuple(s - 1 for _, s, _ in plan)
        placed = v.pad(lo, hi, gaps, value=0)
        ones = v.ones_like("f32").pad(lo, hi, gaps, value=0.0)
        return placed.where(ones > 0.5, self)

    def _set_by_paired(self, keys, value):
        """``x[rows, cols] = v``, ``x[:, idx] = v``, ``x[i, idx] = v``: integer indices
        (ints taken as 0-d ones) on adjacent dims, the others whole, as torch's. The
        indexed dims become one flat first dim, set as ``x[idx] = v`` is."""
        keys = tuple(self._tensor_of(k, "i32") if isinstance(k, int) else k for k in keys)
        tensors = [i for i, k in enumerate(keys) if _is_tensor(k)]
        if any(keys[i].dtype.kind == "b" for i in tensors):  # x[:, mask] = v
            keys = self._mask_as_indices(keys, tensors)
            tensors = [i for i, k in enumerate(keys) if _is_tensor(k)]
        a, b, flat = self._flat_index(keys, tensors)
        lead, tail = self.shape[:a], self.shape[b:]
        rows = self.reshape(lead + (_count(self.shape[a:b]),) + tail).movedim(a, 0)
        if _is_tensor(value) and value.ndim:  # the value laid out as x[keys] is, then moved
            picked = lead + tuple(flat.shape) + tail
            v = self._value(value, picked)
            k = len(flat.shape)
            order = [*range(a, a + k), *range(a), *range(a + k, len(picked))]
            value = v.permute(order).reshape((-1,) + lead + tail)
        new = rows._set_by_tensor(flat.reshape((-1,)), value)
        return new.movedim(0, a).reshape(self.shape)

    def _set_by_tensor(self, index, value):
        """A bool mask over leading dims, or an integer tensor over the first dim."""
        n = self.shape[0] if self.ndim else 0
        if index.dtype.kind == "b":
            lead = tuple(index.shape)
            if lead != tuple(self.shape[: len(lead)]):
                raise ShapeError(f"mask of shape {lead} does not fit {tuple(self.shape)}")
            m = 1
            for d in lead:
                m *= d
            rest = tuple(self.shape[len(lead) :])
            hit = index.reshape((m,))
            # the k-th true place takes the value's k-th row
            order = (hit.cast("i32").cumsum(0) - 1).clamp(0, None)
        else:
            idx = index.reshape((-1,)).cast("i32")
            idx = idx.where(idx >= 0, idx + n)
            pos = idx.arange_like(n).cast("i32")
            match = idx.unsqueeze(-1) == pos  # [K, n]
            m, rest = n, tuple(self.shape[1:])
            hit = match.cast("i32").sum(0) > 0
            k = idx.arange_like(idx.shape[0]).cast("i32").unsqueeze(-1)
            order = (match.cast("i32") * k).amax(0)  # which listed index fills row j
        rows = self.reshape((m,) + rest)
        vshape = tuple(value.shape) if _is_tensor(value) else ()
        if len(vshape) <= len(rest):  # one value (row) for every place
            spread = self._value(value, (m,) + rest)
        else:
            spread = value.cast(self.dtype).take(order, 0)
        wide = hit.reshape((m,) + (1,) * len(rest))
        return spread.where(wide, rows).reshape(self.shape)

    def __iadd__(self, other):
        return self._assign(self + other, "+=")

    def __isub__(self, other):
        return self._assign(self - other, "-=")

    def __imul__(self, other):
        return self._assign(self * other, "*=")

    def __itruediv__(self, other):
        return self._assign(self / other, "/=")


def _placement(shape, keys) -> list[tuple[int, int, int]]:
    """(start, step, count) per dim of ``shape`` for a key of ints, slices, None and
    Ellipsis (an int is a count of one)."""
    real = [k for k in keys if k is not None and k is not Ellipsis]
    out: list[tuple[int, int, int]] = []
    dim = 0
    for k in keys:
        if k is None:
            continue
        if k is Ellipsis:
            for _ in range(len(shape) - len(real)):
                out.append((0, 1, shape[dim]))
                dim += 1
            continue
        n = shape[dim]
        if isinstance(k, slice):
            a, b, s = k.indices(n)
            out.append((a, s, slice_len(a, max(a, b), s)))
        else:
            out.append((k + n if k < 0 else k, 1, 1))
        dim += 1
    out.extend((0, 1, shape[d]) for d in range(dim, len(shape)))
    return out


def _count(sizes) -> int:
    n = 1
    for d in sizes:
        n *= d
    return n
