"""Scellis: train neural networks on your own GPU, natively or in a browser tab.

The public surface; everything here is a re-export.
"""

from . import data, nn, optim, rng  # noqa: F401
from .autograd import enable_grad, is_grad_enabled, no_grad  # noqa: F401
from .base.dtypes import bool_, f16, f32, f64, i32, u32  # noqa: F401
from .base.errors import ScellisError, ShapeError  # noqa: F401
from .codecs.state_file import load, save  # noqa: F401
from .devices.adapters import list_adapters  # noqa: F401
from .runtime import (  # noqa: F401
    Tensor,
    arange,
    default_device,
    full,
    functional,  # noqa: F401
    ones,
    rand,
    set_default_device,
    tensor,
    zeros,
)
from .runtime.creation import from_bytes, generator, manual_seed, randn  # noqa: F401
from .version import __version__  # noqa: F401
