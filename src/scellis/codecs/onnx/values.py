"""What the ONNX importer knows about each graph value (codecs layer).

The importer runs the graph abstractly: a value is a constant (folded), a shape
vector with symbolic dims (``Shape`` of an input, as exporters build zero initial
states from it), zeros of some shape, a symbolic tensor flowing out of a record input
or a block (with a pending axis permutation), or a partial match of a multi-node
pattern (MatMul waiting for its bias Add, the five nodes of an exact GELU).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ...base.errors import ScellisError
from ..raw import ITEMSIZE, RawTensor, from_values, numel


class Run:
    """A value made at run time: a record input or a block's output (tensor or host)."""

    def __init__(self, src: str, on_host: bool = False):
        self.src, self.on_host = src, on_host


@dataclass
class Const:
    t: RawTensor

    @property
    def values(self) -> list:
        return self.t.values()

    def scalar(self):
        v = self.values
        if len(v) != 1:
            raise ScellisError(f"expected a single constant, got shape {list(self.t.shape)}")
        return v[0]


@dataclass
class ShapeVec:
    dims: list  # ints, or str for a symbolic dim


@dataclass
class Zeros:
    pass


@dataclass
class Sym:
    """A tensor of the model: ``src`` is a record input or a block; ``shape`` as it is now.

    ``perm`` is a permutation pending on src's layout (None: src's own layout);
    ``tag`` marks a recurrent block's raw ONNX output ("rnn_y": [T, 1, B, H]).
    """

    src: str
    shape: list
    perm: tuple | None = None
    tag: str | None = None


@dataclass
class Partial:
    """A pattern in progress: ``kind`` names the stage, ``base`` the tensor it started from."""

    kind: str
    base: Sym
    data: dict = field(default_factory=dict)


@dataclass
class Opaque:
    """A value the importer cannot express (an LSTM's final state); an error when used."""

    why: str


def transpose2(t: RawTensor) -> RawTensor:
    """The transpose of a 2-d tensor (bytes moved, any dtype): one strided slice per column."""
    if len(t.shape) != 2:
        raise ScellisError(f"expected a 2-d weight, got shape {list(t.shape)}")
    r, c = t.shape
    if not r or not c:
        return RawTensor(t.dtype, (c, r), b"")
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[ITEMSIZE[t.dtype][0]]
    flat = memoryview(t.data).cast(fmt)
    return RawTensor(t.dtype, (c, r), b"".join(flat[j::c].tobytes() for j in range(c)))


def take_rows(t: RawTensor, start: int, stop: int) -> RawTensor:
    """Rows [start, stop) of the first axis."""
    row = numel(t.shape[1:]) * ITEMSIZE[t.dtype][0]
    return RawTensor(t.dtype, (stop - start, *t.shape[1:]), t.data[start * row : stop * row])


def cat_rows(parts: list[RawTensor]) -> RawTensor:
    n = sum(p.shape[0] for p in parts)
    return RawTensor(parts[0].dtype, (n, *parts[0].shape[1:]), b"".join(p.data for p in parts))


def reorder_gates(t: RawTensor, order: list[int], hidden: int) -> RawTensor:
    """Gate blocks of ``hidden`` rows each, taken in ``order`` (ONNX -> torch order)."""
    return cat_rows([take_rows(t, g * hidden, (g + 1) * hidden) for g in order])


def squeeze0(t: RawTensor) -> RawTensor:
    if not t.shape or t.shape[0] != 1:
        raise ScellisError(f"expected a leading axis of 1, got shape {list(t.shape)}")
    return RawTensor(t.dtype, t.shape[1:], t.data)


def as_f32(x: float) -> float:
    """The shortest decimal that reads back as the same f32 (epsilons exported as f32)."""
    want = struct.pack("<f", x)
    for digits in range(1, 10):
        s = float(f"{x:.{digits}g}")
        if struct.pack("<f", s) == want:
            return s
    return x


def const_int(shape, values) -> Const:
    return Const(from_values("I64", tuple(shape), list(values)))
