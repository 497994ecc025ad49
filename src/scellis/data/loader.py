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
from .shuffle import shuffled_order


class Dataset:
    """Base for map-style datasets: ``__len__`` and ``__getitem__``."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, i):
        raise NotImplementedError


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


def random_split(dataset, lengths, seed: int = 0) -> list[Subset]:
    """Disjoint subsets of the given lengths from one Philox permutation of ``seed``."""
    lengths = [int(n) for n in lengths]
    if sum(lengths) != len(dataset):
        raise ScellisError(f"random_split: lengths sum to {sum(lengths)}, not {len(dataset)}")
    order = shuffled_order(len(dataset), seed, 0)
    out, at = [], 0
    for n in lengths:
        out.append(Subset(dataset, order[at : at + n]))
        at += n
    return out


def default_collate(items: list):
    """Stack a batch of items field by field (tensors stacked on a new first axis)."""
    first = items[0]
    if isinstance(first, Tensor):
        return stack(items, 0)
    if isinstance(first, (bool, int, float)):
        return tensor(list(items))
    if isinstance(first, Mapping):
        return {k: default_collate([it[k] for it in items]) for k in first}
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate(list(f)) for f in zip(*items))
    raise ScellisError(f"cannot collate items of type {type(first).__name__}")


class DataLoader:
    """torch's DataLoader(dataset, batch_size=1, shuffle=False, drop_last=False), with the
    order drawn from the Philox ``shuffle`` stream of ``seed`` (or ``generator``'s
    seed; by default the eager streams' seed, which ``scellis.manual_seed`` sets).
    ``num_workers``, ``pin_memory`` and ``persistent_workers`` are accepted and change
    nothing: batches are gathered on the tensors' own device, in this thread."""

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, *,
                 drop_last: bool = False, generator: Generator | None = None,
                 seed: int | None = None, collate_fn: Callable | None = None,
                 num_workers: int = 0, pin_memory: bool = False,
                 persistent_workers: bool = False):  # fmt: skip
        if batch_size < 1:
            raise ScellisError(f"batch_size must be >= 1, got {batch_size}")
        if seed is None:
            seed = (generator or eager_stream("shuffle")).seed
        self.dataset, self.batch_size = dataset, int(batch_size)
        self.shuffle, self.drop_last, self.seed = bool(shuffle), bool(drop_last), int(seed)
        self.collate_fn = collate_fn
        self.epoch = 0

    def __len__(self) -> int:
        full, rest = divmod(len(self.dataset), self.batch_size)
        return full if self.drop_last or not rest else full + 1

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next ``iter()`` draws its order for."""
        self.epoch = int(epoch)

    def order(self, epoch: int) -> list[int]:
        n = len(self.dataset)
        return shuffled_order(n, self.seed, epoch) if self.shuffle else list(range(n))

    def __iter__(self):
        order = self.order(self.epoch)
        self.epoch += 1
        for k in range(len(self)):
            yield self._batch(order[k * self.batch_size : (k + 1) * self.batch_size])

    def _batch(self, rows: list[int]):
        if self.collate_fn is None and isinstance(self.dataset, TensorDataset):
            out = self.dataset.rows(rows)
            return out[0] if len(out) == 1 else list(out)
        collate = self.collate_fn or default_collate
        return collate([self.dataset[i] for i in rows])
