"""The op table (ops layer): one OpDef per primitive, and composites over primitives."""

from . import (  # noqa: F401  (register)
    attention,
    dense,
    elementwise,
    fused_step,
    indexing,
    linalg,
    movement,
    norm,
    optim,
    quant,
    random,
    recurrent,
    reduce,
    unfold,
    xent,
)
from .table import OPS, OpDef, Spec, get_op  # noqa: F401
