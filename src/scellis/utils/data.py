"""torch.utils.data's names (re-exports of ``scellis.data``'s loaders): ``from
scellis.utils.data import DataLoader, TensorDataset`` reads as the torch line it replaces."""

import sys

from ..data.loader import *  # noqa: F403 (the names its __all__ lists)
from ..data.loader import __all__  # noqa: F401

dataloader = sys.modules[__name__]  # torch.utils.data.dataloader.default_collate
