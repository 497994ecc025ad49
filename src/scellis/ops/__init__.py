"""The op table (ops layer): one OpDef per primitive, and composites over primitives."""

from . import elementwise, indexing, linalg, movement, random, reduce  # noqa: F401  (register)
from .table import OPS, OpDef, Spec, get_op  # noqa: F401
