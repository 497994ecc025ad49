"""Training (train layer): the async host-driven loop, train state, precision and tiers.

Sits above the catalog: it drives a Module, a catalog loss, optimizer and scheduler.
Imports no NumPy, so the browser runs it as it is.
"""

from .data import Batches, shuffled_order  # noqa: F401
from .determinism import PROD_TOLERANCE, TIERS, Tier, resolve_tier  # noqa: F401
from .fit import fit, fit_loop, run  # noqa: F401
from .fit_config import FitConfig  # noqa: F401
from .guard import finite_flag, guarded_step  # noqa: F401
from .precision import LossScaler, Precision, resolve_precision  # noqa: F401
from .state import TrainState  # noqa: F401
from .stopping import EarlyStopping  # noqa: F401
