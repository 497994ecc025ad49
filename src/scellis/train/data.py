"""Training data in batches (train layer): the minimal interface the loop drives.

A data source is anything with ``batches(epoch, seed, start=0)`` yielding ``(x, y)``
pairs (``Batches`` here), a callable ``f(epoch)`` returning an iterable of pairs, or
a plain iterable of pairs replayed in its own order every epoch.

``Batches`` shuffles rows with the Philox ``shuffle`` stream: the order of epoch
``e`` sorts the row indices by the draws of counter (block, draw 0, step ``e``) under
key ``stream_key(seed, "shuffle")``, ties broken by index. Batch ``k`` of epoch
``e`` therefore depends only on (seed, e, k), on every host, and a resumed run can
start mid-epoch without replaying the batches before it. The order itself lives in
the data layer (``scellis.data.shuffle``) and is re-exported here.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..data.shuffle import shuffled_order
from ..devices.base import get_device
from ..ops.composites import take
from ..runtime.creation import tensor
from ..runtime.dispatch import default_device
from ..runtime.tensor import Tensor

__all__ = ["Batches", "batch_rows", "epoch_batches", "shuffled_order"]


class Batches:
    """Rows of ``x`` and ``y`` (tensors, or nested lists with rows first) in batches."""

    def __init__(
        self, x, y, batch_size: int, *, shuffle: bool = True, drop_last: bool = False, device=None
    ):
        n = len(x)
        if n != len(y):
            raise ScellisError(f"x has {n} rows and y {len(y)}; they must match")
        if batch_size < 1:
            raise ScellisError(f"batch_size must be >= 1, got {batch_size}")
        self.x, self.y, self.n, self.batch_size = x, y, n, int(batch_size)
        self.shuffle, self.drop_last = shuffle, drop_last
        self.device = get_device(device) if device is not None else None

    def __len__(self) -> int:
        full, rest = divmod(self.n, self.batch_size)
        return full if self.drop_last or not rest else full + 1

    def order(self, epoch: int, seed: int) -> list[int]:
        return shuffled_order(self.n, seed, epoch) if self.shuffle else list(range(self.n))

    def batches(self, epoch: int, seed: int, start: int = 0):
        order = self.order(epoch, seed)
        for k in range(start, len(self)):
            rows = order[k * self.batch_size : (k + 1) * self.batch_size]
            yield self._rows(self.x, rows), self._rows(self.y, rows)

    def _rows(self, data, rows: list[int]):
        if isinstance(data, Tensor):
            idx = tensor(rows, device=data.device, dtype="i32")
            return take(data, idx, 0)
        dev = self.device or default_device()
        if hasattr(data, "__array_interface__"):  # an array: index it (numpy is not imported)
            return tensor(data[rows], device=dev)
        return tensor([data[i] for i in rows], device=dev)


def epoch_batches(data, epoch: int, seed: int, start: int = 0):
    """The (x, y) pairs of ``epoch`` from any data source, from batch ``start`` on."""
    if hasattr(data, "batches"):
        return data.batches(epoch, seed, start)
    it = iter(data(epoch) if callable(data) else data)
    for _ in range(start):
        next(it, None)
    return it


def batch_rows(x) -> int:
    """Samples in a batch: the leading size of ``x`` (or of its first tensor)."""
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], Tensor):
        x = x[0]
    return x.shape[0] if isinstance(x, Tensor) and x.ndim else 1
