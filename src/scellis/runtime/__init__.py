"""Runtime (runtime layer): the Tensor, dispatch onto devices, creation functions."""

from .creation import arange, full, ones, rand, tensor, zeros  # noqa: F401
from .dispatch import default_device, set_default_device  # noqa: F401
from .legacy_hook import LEGACY
from .legacy_tensor import legacy_init
from .tensor import Tensor  # noqa: F401

LEGACY[0] = legacy_init  # torch's Tensor(2, 3), set once the creation functions exist
