"""torch.optim's shape over the catalog (optim layer): ``scellis.optim.Adam(params, lr=...)``.

Thin constructors over the catalog optimizers and schedulers (one implementation
for SML runs and Python code). Browser-safe: pure Python, no NumPy.
"""

from ..settings import UnsupportedName
from . import lr_scheduler, swa_utils  # noqa: F401
from .elementwise import Adadelta, Adamax, Rprop  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .optimizers import (  # noqa: F401
    SGD,
    Adagrad,
    Adam,
    AdamW,
    NAdam,
    Optimizer,
    RAdam,
    RMSprop,
)

# torch optimizers with no counterpart here, and what to use instead
_MISSING = {
    "ASGD": "SGD with a scheduler, or an average of the weights kept by hand",
    "SparseAdam": "Adam (there are no sparse gradients here)",
}


def __getattr__(name: str):
    if name in _MISSING:
        raise UnsupportedName(f"scellis.optim has no {name}; use {_MISSING[name]}")
    raise AttributeError(f"module 'scellis.optim' has no attribute {name!r}")
