"""Scellis: train neural networks on your own GPU, natively or in a browser tab.

The public surface; everything here is a re-export.
"""

from . import (  # noqa: F401
    amp,
    autograd,  # noqa: F401
    cuda,
    data,
    nn,
    optim,
    rng,
)
from .autograd import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .base.dtypes import bool_, f16, f32, f64, i32, u32  # noqa: F401
from .base.dtypes import bool_ as bool  # noqa: F401, A004 (torch's names for the dtypes)
from .base.dtypes import f16 as float16  # noqa: F401
from .base.dtypes import f16 as half  # noqa: F401
from .base.dtypes import f32 as float  # noqa: F401, A004
from .base.dtypes import f32 as float32  # noqa: F401
from .base.dtypes import f64 as double  # noqa: F401
from .base.dtypes import f64 as float64  # noqa: F401
from .base.dtypes import i32 as int  # noqa: F401, A004
from .base.dtypes import i32 as int32  # noqa: F401
from .base.errors import ScellisError, ShapeError  # noqa: F401
from .catalog.module_precision import autocast  # noqa: F401
from .codecs.state_file import save  # noqa: F401
from .devices.adapters import list_adapters  # noqa: F401
from .devices.base import device  # noqa: F401
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
from .runtime.torch_functions import *  # noqa: F403 (torch's free functions)
from .runtime.torch_functions import Generator, bmm, einsum, multinomial, randperm  # noqa: F401
from .train.compiled import compile  # noqa: F401, A004 (torch's name)
from .version import __version__  # noqa: F401


def __getattr__(name: str):
    """torch's 64-bit integer names: i32 here, with one warning the first time."""
    if name in ("int64", "long"):
        from .base.dtypes import narrowed_int

        return narrowed_int(name)
    raise AttributeError(f"module 'scellis' has no attribute {name!r}")
