"""torch's legacy ``Tensor(...)`` constructor (runtime layer): always float32.

``Tensor(2, 3)`` is a [2, 3] tensor (zeros here, where torch leaves memory as it finds
it), ``Tensor()`` an empty one, ``Tensor([1, 2])`` or an array the values as float32,
and ``Tensor(t)`` a tensor on ``t``'s storage (torch gives ``t`` itself). At most six
sizes: the engine's own constructor takes six arguments.
"""

from __future__ import annotations

from ..base.dtypes import f32
from ..base.errors import ScellisError
from . import creation as C
from .tensor import Tensor


def legacy_init(self: Tensor, args: tuple, device) -> None:
    """Fill ``self``'s slots as torch's ``Tensor(*args, device=device)`` would make it;
    ``args`` are the engine constructor's first five (None where not given), so a sixth
    size arrives as ``device``."""
    if isinstance(device, int) and not isinstance(device, bool):
        args, device = (*args, device), None
    n = len(args)
    while n and args[n - 1] is None:
        n -= 1
    t = _legacy(args[:n], device)
    self.__init__(t._buf, t.shape, t.strides, t.offset, t.dtype, t.device)


def _legacy(args: tuple, device) -> Tensor:
    if not args:
        return C.zeros((0,), f32, device)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return C.zeros(tuple(args), f32, device)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Tensor):
            return data
        if isinstance(data, (list, tuple)) or hasattr(data, "__array_interface__"):
            return C.tensor(data, device=device, dtype=f32)
    got = ", ".join(type(a).__name__ for a in args)
    raise ScellisError(
        f"Tensor({got}): torch's Tensor takes sizes (ints) or one sequence of values; "
        "use scellis.tensor(value) for a number"
    )
