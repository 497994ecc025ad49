"""Scellis: train neural networks on your own GPU, natively or in a browser tab.

The public surface; everything here is a re-export.
"""

from . import data, nn, optim, rng  # noqa: F401
from .autograd import enable_grad, is_grad_enabled, no_grad  # noqa: F401
from .base.dtypes import bool_, f16, f32, f64, i32, u32  # noqa: F401
from .base.errors import ScellisError, ShapeError  # noqa: F401
from .codecs.state_file import save  # noqa: F401
from .devices.adapters import list_adapters  # noqa: F401
from .run.loading import load, train_record  # noqa: F401
from .run.reproduce import reproduce  # noqa: F401
from .run.share import read_link, share  # noqa: F401
from .runtime import (  # noqa: F401
    Tensor,
    default_device,
    functional,  # noqa: F401
    set_default_device,
    tensor,
)
from .runtime.creation import from_bytes, generator, manual_seed  # noqa: F401
from .runtime.factories import (  # noqa: F401
    arange,
    as_tensor,
    empty,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    zeros,
    zeros_like,
)
from .runtime.functional import cat, stack, where  # noqa: F401
from .version import __version__  # noqa: F401
