"""torch.nn.utils.rnn (nn layer): PackedSequence and its packing helpers.

A PackedSequence holds torch's fields: ``data`` (the valid steps, time-major, the
longest sequences first within each step), ``batch_sizes`` (sequences alive at each
step), ``sorted_indices`` and ``unsorted_indices`` (None when the batch came sorted).
Packing and unpacking are gathers with positions computed here, so gradients flow
through both. The recurrent layers take one and give one back.
"""

from __future__ import annotations

from typing import NamedTuple

from ...base.errors import ScellisError
from ...ops import composites as C
from ...runtime.factories import as_tensor
from ...runtime.tensor import Tensor


def _ints(v) -> list[int]:
    if v is None:
        return []
    if isinstance(v, Tensor):
        v = v.tolist()
    return [int(i) for i in v]


def _index(values: list[int], like: Tensor) -> Tensor:
    return as_tensor(values, dtype="i32", device=like.device.name)


class PackedSequence(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def order(self) -> list[int]:
        """Original batch positions, longest first (the packed order)."""
        sizes = _ints(self.batch_sizes)
        return _ints(self.sorted_indices) or list(range(sizes[0] if sizes else 0))

    def lengths(self) -> list[int]:
        """Each sequence's length, in the original batch order."""
        sizes, order = _ints(self.batch_sizes), self.order()
        out = [0] * len(order)
        for rank, b in enumerate(order):
            out[b] = sum(1 for s in sizes if s > rank)
        return out

    def to(self, *args, **kwargs) -> PackedSequence:
        return self._replace(data=self.data.to(*args, **kwargs))


def _packed_rows(order: list[int], sizes: list[int], batch: int) -> list[int]:
    """Rows of a time-major [T*B, ...] tensor that make the packed ``data``."""
    return [t * batch + order[j] for t, n in enumerate(sizes) for j in range(n)]


def _pack_time_major(x: Tensor, lengths: list[int], order: list[int], sorted_given) -> tuple:
    T, B = x.shape[0], x.shape[1]
    if max(lengths) > T:
        raise ScellisError(f"a length of {max(lengths)} exceeds the {T} steps given")
    if min(lengths) < 1:
        raise ScellisError("pack_padded_sequence: every length must be at least 1")
    sizes = [sum(1 for n in lengths if n > t) for t in range(max(lengths))]
    flat = x.reshape(T * B, *x.shape[2:])
    data = C.take(flat, _index(_packed_rows(order, sizes, B), x), 0)
    batch_sizes = as_tensor(sizes, dtype="i32", device="reference")
    if sorted_given:
        return PackedSequence(data, batch_sizes)
    inverse = [0] * B
    for rank, b in enumerate(order):
        inverse[b] = rank
    as_idx = lambda v: as_tensor(v, dtype="i32", device="reference")  # noqa: E731
    return PackedSequence(data, batch_sizes, as_idx(order), as_idx(inverse))


def pack_padded_sequence(input, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:  # fmt: skip
    """torch's pack_padded_sequence: [T, B, *] (or [B, T, *]) and each sequence's length."""
    lengths = _ints(lengths)
    x = input.permute(1, 0, *range(2, input.ndim)) if batch_first else input
    if len(lengths) != x.shape[1]:
        raise ScellisError(f"{len(lengths)} lengths for a batch of {x.shape[1]}")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise ScellisError("pack_padded_sequence: lengths must be sorted longest first, "
                               "or pass enforce_sorted=False")  # fmt: skip
        return _pack_time_major(x, lengths, list(range(len(lengths))), True)
    order = sorted(range(len(lengths)), key=lambda b: -lengths[b])
    return _pack_time_major(x, lengths, order, False)


def unpack_time_major(seq: PackedSequence, padding_value: float = 0.0, total_length=None):
    """The padded [T, B, *] tensor of ``seq`` (original batch order) and the lengths."""
    sizes, order = _ints(seq.batch_sizes), seq.order()
    B, T = len(order), len(sizes)
    if total_length is not None:
        if total_length < T:
            raise ScellisError(f"total_length {total_length} is shorter than the {T} steps")
        T = int(total_length)
    n = seq.data.shape[0]
    rank = {b: r for r, b in enumerate(order)}
    offsets = [sum(sizes[:t]) for t in range(len(sizes))]
    rows = [offsets[t] + rank[b] if t < len(sizes) and rank[b] < sizes[t] else n
            for t in range(T) for b in range(B)]  # fmt: skip
    filler = seq.data.new_full((1, *seq.data.shape[1:]), float(padding_value))
    data = seq.data.cat([filler], 0)
    padded = C.take(data, _index(rows, data), 0).reshape(T, B, *seq.data.shape[1:])
    return padded, seq.lengths()


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length=None):  # fmt: skip
    """torch's pad_packed_sequence: (padded, lengths), lengths an integer tensor."""
    padded, lengths = unpack_time_major(sequence, padding_value, total_length)
    if batch_first:
        padded = padded.permute(1, 0, *range(2, padded.ndim))
    return padded, as_tensor(lengths, dtype="i32", device="reference")


def pack_like(padded: Tensor, like: PackedSequence) -> PackedSequence:
    """``padded`` [T, B, *] packed with the lengths and order of ``like``."""
    order = like.order()
    sizes = _ints(like.batch_sizes)
    flat = padded.reshape(padded.shape[0] * padded.shape[1], *padded.shape[2:])
    data = C.take(flat, _index(_packed_rows(order, sizes, padded.shape[1]), padded), 0)
    return like._replace(data=data)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:  # fmt: skip
    """torch's pad_sequence: [L_i, *] tensors padded to the longest and stacked."""
    if padding_side not in ("right", "left"):
        raise ScellisError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
    T = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = [T - s.shape[0]] + [0] * (s.ndim - 1)
        none = [0] * s.ndim
        lo, hi = (none, extra) if padding_side == "right" else (extra, none)
        padded.append(s.pad(lo, hi, None, float(padding_value)) if extra[0] else s)
    return C.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list[Tensor]:
    x = (
        padded_sequences
        if batch_first
        else padded_sequences.permute(1, 0, *range(2, padded_sequences.ndim))
    )
    return [x[b, :n] for b, n in enumerate(_ints(lengths))]
