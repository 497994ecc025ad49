"""torch.utils.data's samplers and dataset combinators (data layer), pure Python.

Samplers yield dataset indices; their orders come from the Philox ``shuffle`` stream
of a seed (a ``generator``'s, else the eager streams'), one new order per pass, so a
run repeats from its seed on every host. ``ConcatDataset`` chains datasets and
``IterableDataset`` is the base of stream-style datasets the loader batches as they come.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator

from ..base.errors import ScellisError
from ..base.rng import raw_u32, stream_key
from ..runtime.creation import generator as eager_stream
from .shuffle import shuffled_order


class IterableDataset:
    """Base of datasets read by iteration (``__iter__``), not by index."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class ConcatDataset:
    """The datasets one after the other: index ``i`` runs through them in turn."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ScellisError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes, total = [], 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, i: int):
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"index {i} out of range for {len(self)} items")
        k = bisect.bisect_right(self.cumulative_sizes, i)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][i - start]


def _seed(generator) -> int:
    return int((generator or eager_stream("shuffle")).seed)


class Sampler:
    """Base of the samplers: an iterable of indices with a length."""

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation per pass (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        super().__init__(data_source)
        self.replacement, self._n = bool(replacement), num_samples
        self.seed, self.epoch = _seed(generator), 0

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._n is None else int(self._n)

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self):
        n, epoch = len(self.data_source), self.epoch
        self.epoch += 1
        if self.replacement:
            draws = raw_u32(stream_key(self.seed, "sampler"), self.num_samples, 0, epoch)
            return iter([d % n for d in draws])
        order = shuffled_order(n, self.seed, epoch)
        reps = math.ceil(self.num_samples / n) if n else 0
        return iter((order * max(reps, 1))[: self.num_samples])


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order per pass."""

    def __init__(self, indices, generator=None):
        super().__init__(None)
        self.indices, self.seed, self.epoch = list(indices), _seed(generator), 0

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self):
        order = shuffled_order(len(self.indices), self.seed, self.epoch)
        self.epoch += 1
        return iter([self.indices[i] for i in order])


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn by ``weights`` (with replacement by default)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        super().__init__(None)
        w = weights.tolist() if hasattr(weights, "tolist") else list(weights)
        self.weights, self.num_samples = [float(v) for v in w], int(num_samples)
        if not replacement and self.num_samples > len(self.weights):
            raise ScellisError(
                "WeightedRandomSampler: more samples than weights without replacement"
            )
        self.replacement, self.seed, self.epoch = bool(replacement), _seed(generator), 0

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self):
        key = stream_key(self.seed, "sampler")
        u = [
            d / 4294967296.0
            for d in raw_u32(key, len(self.weights) + self.num_samples, 0, self.epoch)
        ]
        self.epoch += 1
        if not self.replacement:  # an exponential race: the smallest -log(u)/w win
            keys = [
                (-math.log(1.0 - x) / w if w > 0 else math.inf) for x, w in zip(u, self.weights)
            ]
            return iter(sorted(range(len(keys)), key=keys.__getitem__)[: self.num_samples])
        cdf, total = [], 0.0
        for w in self.weights:
            total += w
            cdf.append(total)
        draws = u[len(self.weights) :]
        return iter([min(bisect.bisect_right(cdf, x * total), len(cdf) - 1) for x in draws])


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last shorter unless ``drop_last``)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        super().__init__(None)
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), bool(drop_last)

    def __len__(self) -> int:
        full, rest = divmod(len(self.sampler), self.batch_size)
        return full if self.drop_last or not rest else full + 1

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch


def get_worker_info():
    """None: batches are made in the calling thread (torch's answer outside a worker)."""
    return None
