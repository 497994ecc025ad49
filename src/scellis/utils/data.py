"""torch.utils.data's names (re-exports of ``scellis.data``'s loaders): ``from
scellis.utils.data import DataLoader, TensorDataset`` reads as the torch line it replaces."""

import sys

from ..data.loader import (  # noqa: F401
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

dataloader = sys.modules[__name__]  # torch.utils.data.dataloader.default_collate
