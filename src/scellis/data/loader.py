"""torch.utils.data's shape (data layer): datasets, batches in a reproducible order.

``DataLoader`` shuffles with the Philox ``shuffle`` stream, exactly as the training
loop's ``Batches`` does: epoch ``e`` of a loader seeded ``s`` yields the rows in
``shuffled_order(len(dataset), s, e)``, on every host, so a run is reproducible from
its seed alone. Each ``iter(loader)`` is the next epoch (``set_epoch`` picks one).

A ``TensorDataset`` is batched by one gather per tensor; any other dataset (an object
with ``__len__`` and ``__getitem__``) is batched item by item and collated: tensors
are stacked, numbers become a tensor, tuples, lists and dicts are collated per field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..base.errors import ScellisError
from ..base.rng import Generator
from ..ops.composites import stack, take
from ..runtime.creation import generator as eager_stream
from ..runtime.creation import tensor
from ..runtime.tensor import Tensor
from .samplers import (  # noqa: F401 (torch.utils.data's names, re-exported)
    BatchSampler,
    ConcatDataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    get_worker_info,
)
from .shuffle import shuffled_order

# torch.utils.data's names, listed once: ``scellis.data`` and ``scellis.utils.data``
# re-export exactly these
__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]  # fmt: skip


class Dataset:
    """Base for map-style datasets: ``__len__`` and ``__getitem__``."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, i):
        raise NotImplementedError

    def __add__(self, other):
        return ConcatDataset([self, other])


class TensorDataset(Dataset):
    """Rows of tensors that share their first axis: item ``i`` is ``(t[i] for t)``."""

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ScellisError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0] if tensors[0].ndim else None
        if n is None or any(not t.ndim or t.shape[0] != n for t in tensors):
            raise ScellisError(
                f"TensorDataset: every tensor needs the same first axis, got "
                f"{[tuple(t.shape) for t in tensors]}"
            )
        self.tensors = tensors

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, i: int):
        return tuple(t[i] for t in self.tensors)

    def rows(self, indices: list[int]) -> tuple[Tensor, ...]:
        """The rows ``indices`` of every tensor, one gather each."""
        out = []
        for t in self.tensors:
            idx = tensor(indices, device=t.device, dtype="i32")
            out.append(take(t, idx, 0))
        return tuple(out)


class Subset(Dataset):
    """The items ``indices`` of ``dataset``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int):
        return self.dataset[self.indices[i]]


def _split_lengths(lengths, n: int) -> list[int]:
    """torch's lengths: counts, or fractions summing to 1 (the remainder dealt one by one
    to the first subsets)."""
    lengths = list(lengths)
    if lengths and all(isinstance(v, float) and 0 <= v <= 1 for v in lengths):
        if abs(sum(lengths) - 1) > 1e-6:
            raise ScellisError(f"random_split: fractions sum to {sum(lengths)}, not 1")
        counts = [int(n * f) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        return counts
    return [int(v) for v in lengths]


def random_split(dataset, lengths, generator: Generator | None = None, *,
                 seed: int | None = None) -> list[Subset]:  # fmt: skip
    """Disjoint subsets of the given lengths (or fractions) from one Philox permutation
    of ``seed`` (``generator``'s seed, else 0)."""
    if seed is None:
        seed = generator.seed if generator is not None else 0
    lengths = _split_lengths(lengths, len(dataset))
    if sum(lengths) != len(dataset):
        raise ScellisError(f"random_split: lengths sum to {sum(lengths)}, not {len(dataset)}")
    order = shuffled_order(len(dataset), seed, 0)
    out, at = [], 0
    for n in lengths:
        out.append(Subset(dataset, order[at : at + n]))
        at += n
    return out


def default_collate(items):
    """Stack a batch of items field by field (tensors stacked on a new first axis), with
    torch's containers: a list of fields for tuples and lists, strings as they came."""
    first = items[0]
    if isinstance(first, Tensor):
        return stack(items, 0)
    if isinstance(first, (bool, int, float)):
        return tensor(list(items))
    if isinstance(first, (str, bytes)):
        return items
    if _is_array(first):
        return stack([tensor(a) for a in items], 0)  # NumPy arrays and scalars
    if isinstance(first, Mapping):
        return {k: default_collate([it[k] for it in items]) for k in first}
    fields = zip(*items)
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple stays one
        return type(first)(*(default_collate(f) for f in fields))
    if isinstance(first, (tuple, list)):  # a list, as torch's (a tuple's fields too)
        return [default_collate(f) for f in fields]
    raise ScellisError(f"cannot collate items of type {type(first).__name__}")


def _is_array(x) -> bool:
    """A NumPy array or scalar (anything array-like that is not already a tensor)."""
    return not isinstance(x, Tensor) and all(hasattr(x, a) for a in ("dtype", "shape", "tolist"))


def default_convert(item):
    """One unbatched item as torch's ``batch_size=None`` loader gives it: NumPy arrays
    and scalars made tensors, field by field; everything else as it is."""
    if _is_array(item):
        return tensor(item)
    if isinstance(item, Mapping):
        return {k: default_convert(v) for k, v in item.items()}
    if isinstance(item, tuple) and hasattr(item, "_fields"):  # a namedtuple
        return type(item)(*(default_convert(v) for v in item))
    if isinstance(item, (tuple, list)):
        return [default_convert(v) for v in item]
    return item


class DataLoader:
    """torch's DataLoader(dataset, batch_size=1, shuffle=False, drop_last=False), with the
    order drawn from the Philox ``shuffle`` stream of ``seed`` (or ``generator``'s
    seed; by default the eager streams' seed, which ``scellis.manual_seed`` sets).
    ``num_workers``, ``pin_memory`` and ``persistent_workers`` are accepted and change
    nothing: batches are gathered on the tensors' own device, in this thread."""

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, *,
                 drop_last: bool = False, generator: Generator | None = None,
                 seed: int | None = None, collate_fn: Callable | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0,
                 pin_memory: bool = False, persistent_workers: bool = False,
                 prefetch_factor=None, worker_init_fn=None, timeout=0):  # fmt: skip
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ScellisError("batch_sampler excludes batch_size, shuffle, sampler, drop_last")
            batch_size = max(1, getattr(batch_sampler, "batch_size", 1))
        if shuffle and sampler is not None:
            raise ScellisError("DataLoader: give shuffle=True or a sampler, not both")
        if batch_size is not None and batch_size < 1:
            raise ScellisError(f"batch_size must be >= 1 (or None: one item at a time), "
                               f"got {batch_size}")  # fmt: skip
        if seed is None:
            seed = (generator or eager_stream("shuffle")).seed
        # None: no batching, each item converted (collate_fn's default) as torch does
        self.dataset, self.batch_size = dataset, None if batch_size is None else int(batch_size)
        self.shuffle, self.drop_last, self.seed = bool(shuffle), bool(drop_last), int(seed)
        self.collate_fn = collate_fn
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.epoch = 0

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        full, rest = divmod(n, self.batch_size)
        return full if self.drop_last or not rest else full + 1

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next ``iter()`` draws its order for."""
        self.epoch = int(epoch)

    def order(self, epoch: int) -> list[int]:
        n = len(self.dataset)
        return shuffled_order(n, self.seed, epoch) if self.shuffle else list(range(n))

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._stream()
            return
        if self.batch_sampler is not None:
            for rows in self.batch_sampler:
                yield self._batch(list(rows))
            return
        order = list(self.sampler) if self.sampler is not None else self.order(self.epoch)
        self.epoch += 1
        if self.batch_size is None:
            for i in order:
                yield (self.collate_fn or default_convert)(self.dataset[i])
            return
        for k in range(len(self)):
            yield self._batch(order[k * self.batch_size : (k + 1) * self.batch_size])

    def _stream(self):
        """Batches of an iterable dataset, in its own order."""
        if self.batch_size is None:
            yield from map(self.collate_fn or default_convert, self.dataset)
            return
        collate, batch = self.collate_fn or default_collate, []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield collate(batch)

    def _batch(self, rows: list[int]):
        if self.collate_fn is None and isinstance(self.dataset, TensorDataset):
            # a list even of one tensor, as torch's collate gives: ``for (x,) in loader``
            # and ``batch[0]`` are the batch, never its first row
            return list(self.dataset.rows(rows))
        collate = self.collate_fn or default_collate
        return collate([self.dataset[i] for i in rows])
