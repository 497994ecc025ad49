"""torch's module-level names that are about the process rather than tensors: ``Size``,
the legacy typed constructors (``FloatTensor([...])``), the seed functions, ``jit``.

``jit.script``/``jit.trace`` give back what they are handed (a module or function runs
the same here; ``scellis.compile`` is the engine's compiler), and saving a TorchScript
archive is refused with the alternative. The RNG state is the eager Philox streams'
seed and positions, which ``set_rng_state`` restores.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

from .base.errors import ScellisError
from .base.rng import Generator
from .runtime import creation as C


class Size(tuple):
    """torch's ``Size``: a tuple of dims (``x.shape == torch.Size([2, 3])`` holds)."""

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


def _typed(dtype: str):
    def make(*data):
        if not data:
            return C.zeros((0,), dtype)  # torch's empty tensor
        if len(data) == 1 and not isinstance(data[0], int):
            return C.tensor(data[0], dtype=dtype)
        return C.zeros(tuple(data), dtype)

    make.__doc__ = f"torch's legacy constructor: a list gives its values, ints a {dtype} shape."
    make.legacy_dtype = dtype  # what t.type(torch.FloatTensor) casts to
    return make


FloatTensor, DoubleTensor, HalfTensor = _typed("f32"), _typed("f64"), _typed("f16")
IntTensor, LongTensor, BoolTensor = _typed("i32"), _typed("i32"), _typed("bool")


def initial_seed() -> int:
    return C.generator("default").seed


def seed() -> int:
    """Seed the eager streams from the clock, as torch's ``seed()``; returns the seed."""
    s = time.time_ns() % (2**63)
    C.manual_seed(s)
    return s


def get_rng_state() -> dict:
    """The eager streams' state (seeds and positions), for ``set_rng_state``: plain
    numbers and strings, so a checkpoint dict holding it saves (torch's is a tensor)."""
    return {k: g.state() for k, g in C.stream_state().items()}


def set_rng_state(state) -> None:
    C.set_stream_state(
        {k: g if isinstance(g, Generator) else Generator.from_state(g) for k, g in state.items()}
    )


def _same(obj, *args, **kwargs):
    return obj


def _no_archive(*args, **kwargs):
    raise ScellisError(
        "TorchScript archives are not supported; save weights with scellis.save(model."
        "state_dict(), path) or export with `scellis export`"
    )


jit = SimpleNamespace(script=_same, trace=_same, ignore=_same, unused=_same, export=_same,
                      save=_no_archive, load=_no_archive)  # fmt: skip
