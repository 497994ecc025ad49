"""torch.optim's shape over the catalog (optim layer): ``scellis.optim.Adam(params, lr=...)``.

Thin constructors over the catalog optimizers and schedulers (one implementation
for SML runs and Python code). Browser-safe: pure Python, no NumPy.
"""

from . import lr_scheduler  # noqa: F401
from .elementwise import Adadelta, Adamax  # noqa: F401
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
