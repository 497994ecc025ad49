"""Runtime (runtime layer): the Tensor, dispatch onto devices, creation functions."""

from .creation import arange, full, ones, rand, tensor, zeros  # noqa: F401
from .dispatch import default_device, set_default_device  # noqa: F401
from .tensor import Tensor  # noqa: F401
