"""torch.amp's names (re-exports): ``scellis.amp.autocast``, ``scellis.amp.GradScaler``."""

from .catalog.module_precision import autocast  # noqa: F401
from .optim.amp import GradScaler  # noqa: F401
