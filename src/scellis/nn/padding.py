"""torch.nn's padding layers (nn layer): Zero/Constant/Reflection/Replication/Circular
Pad1d and Pad2d, each ``F.pad`` with its mode; ``padding`` an int (every side) or
torch's tuple (left, right[, top, bottom])."""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.module import Module
from .functional import pad


class _Pad(Module):
    mode, sides = "constant", 2

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        if isinstance(padding, int):
            padding = (padding,) * self.sides
        if len(padding) != self.sides:
            raise ScellisError(f"{type(self).__name__}: padding needs {self.sides} values, "
                               f"got {padding!r}")  # fmt: skip
        self.padding, self.value = tuple(int(p) for p in padding), float(value)

    def forward(self, x):
        return pad(x, self.padding, self.mode, self.value if self.mode == "constant" else None)


class ConstantPad1d(_Pad):
    def __init__(self, padding, value: float):
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    sides = 4


class ZeroPad1d(_Pad):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    sides = 4


class ReflectionPad1d(ZeroPad1d):
    mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    sides = 4


class ReplicationPad1d(ZeroPad1d):
    mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    sides = 4


class CircularPad1d(ZeroPad1d):
    mode = "circular"


class CircularPad2d(CircularPad1d):
    sides = 4
