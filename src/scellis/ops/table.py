"""OpDef and the registry (ops layer): every rule elsewhere is keyed by these names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..base.dtypes import DType
from ..base.errors import ScellisError


class Spec(NamedTuple):
    """What an op needs to know of a tensor: its shape and dtype."""

    shape: tuple[int, ...]
    dtype: DType


@dataclass(frozen=True)
class OpDef:
    name: str
    family: str  # unary | binary | compare | where | reduce | matmul | view | layout | index
    #             | creation | random
    arity: int  # number of tensor inputs; -1 for variadic
    infer: Callable[[list[Spec], dict], list[Spec]]
    attrs: tuple[str, ...] = ()
    # indices of inputs that can carry a gradient (empty: not differentiable)
    diff_inputs: tuple[int, ...] = ()
    # a view op changes shape/strides/offset only; no device runs it
    is_view: bool = False
    doc: str = ""
    tags: frozenset = field(default_factory=frozenset)


OPS: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} registered twice")
    OPS[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise ScellisError(f"unknown op {name!r}") from None
