"""Where a torch-shaped constructor puts its parameters (nn layer).

torch's constructors take ``device=`` and ``dtype=`` keywords; ``"cpu"`` names the
reference device here. ``generator=`` picks the Philox stream the weights are drawn
from (by default the eager ``init`` stream, as the catalog blocks do).
"""

from __future__ import annotations

from ..autograd import no_grad
from ..base.dtypes import as_dtype, f32
from ..base.errors import ScellisError
from ..runtime.creation import full, rand
from ..runtime.creation import generator as init_stream
from ..runtime.tensor import Tensor


def block_args(device=None, dtype=None, generator=None) -> dict:
    """The keyword arguments a catalog block takes, from torch's."""
    return {"device": device, "dtype": dtype, "gen": generator}


def unsupported(what: str, layer: str) -> ScellisError:
    """The error for a torch option the catalog block does not implement yet."""
    return ScellisError(f"{layer}: {what} is not supported yet")


def uniform_param(shape, bound: float, device=None, dtype=None, generator=None) -> Tensor:
    """A trainable U(-bound, bound) tensor drawn from the eager ``init`` stream (or
    ``generator``): torch's default for conv and recurrent weights and biases, whose
    kaiming_uniform(a=sqrt(5)) comes to bound = 1/sqrt(fan_in)."""
    with no_grad():
        u = rand(shape, device, as_dtype(dtype, f32), generator or init_stream("init"))
        t = u * (2.0 * bound) - bound
    return t.requires_grad_()


def constant_param(shape, value: float, device=None, dtype=None) -> Tensor:
    return full(shape, value, as_dtype(dtype, f32), device, requires_grad=True)
