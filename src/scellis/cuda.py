"""torch.cuda's names a script checks (re-exports): there is no CUDA here.

``is_available()`` is False, so ``"cuda" if torch.cuda.is_available() else "cpu"``
picks the reference device (name ``"webgpu"`` to use the GPU); ``cuda.amp`` holds
``autocast`` and ``GradScaler`` as ``torch.cuda.amp`` does.
"""

from types import SimpleNamespace

from .catalog.module_precision import autocast
from .optim.amp import GradScaler

amp = SimpleNamespace(autocast=autocast, GradScaler=GradScaler)


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Nothing to seed: the eager streams are seeded by ``scellis.manual_seed``."""


manual_seed_all = manual_seed


def empty_cache() -> None:
    """Nothing cached to free: there is no CUDA allocator here."""


def synchronize(device=None) -> None:
    """Nothing to wait for: no CUDA stream runs here (readbacks wait for their own work)."""


def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_reserved = memory_allocated
