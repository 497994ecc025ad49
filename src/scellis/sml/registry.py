"""The catalog as SML sees it (sml layer): a protocol, field descriptions, shape mismatches.

SML never imports the catalog; whoever validates a document passes an object with
these methods (``scellis.catalog.sml_registry`` adapts the built-in catalog).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Protocol

from ..base.errors import ScellisError

Shape = list  # dims: positive ints or symbolic names ("batch", "seq")


@dataclass(frozen=True)
class FieldInfo:
    """One field of a catalog entry: ``type`` is ``int``, ``float``, ``bool``, ``str``,
    ``tuple[float, float]``, ``list`` or a union like ``int | None``."""

    name: str
    type: str
    default: Any = None
    required: bool = False
    doc: str = ""
    min: float | None = None
    max: float | None = None
    exclusive_min: bool = False
    choices: tuple | None = None
    exclusive_max: bool = False

    def as_json(self) -> dict:
        # field by field rather than dataclasses.asdict (a deep copy): the form asks for
        # every field of every block on each edit
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["choices"] = list(self.choices) if self.choices is not None else None
        if isinstance(d["default"], (tuple, list)):
            d["default"] = list(d["default"])
        return d


class ShapeMismatch(ScellisError):
    """Raised by a shape rule: input ``index`` has ``got`` where ``expected`` was needed;
    ``field`` names the block's field that holds ``expected``, when one does (setting
    it to ``got`` makes the block fit its input)."""

    def __init__(self, what: str, expected, got, index: int = 0, field: str | None = None):
        self.what, self.expected, self.got, self.index = what, expected, got, index
        self.field = field
        super().__init__(f"expects {what} {expected}, gets {got}")


class Registry(Protocol):
    def ids(self, kind: str) -> list[str]:
        """Every id of one kind: ``block``, ``optimizer``, ``scheduler`` or ``loss``."""

    def kind_of(self, id: str) -> str | None:
        """The kind of ``id``, or None when no entry has that id."""

    def fields(self, id: str) -> list[FieldInfo]:
        """The fields of a known entry, in declaration order."""

    def doc(self, id: str) -> str:
        """One line about the entry."""

    def infer_shape(self, id: str, fields: dict, inputs: list[Shape]) -> Shape | None:
        """The output shape of a block, None when unknown; raises ShapeMismatch."""

    # Optional (a registry without schedulers leaves them out):
    # ``multiplicative(id)``: the scheduler multiplies the rate by a ratio of the step;
    # ``multiplicative_parts(id)``: a composite scheduler whose parts all must be.


def out_of_range(spec, v) -> str | None:
    """Why number ``v`` breaks the range of field ``spec`` (a FieldInfo or the catalog's
    FieldSpec, which carry the same bounds), or None; a list or tuple is
    checked number by number."""
    if isinstance(v, (list, tuple)):
        return next((p for x in v if (p := out_of_range(spec, x))), None)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if spec.min is not None and (v <= spec.min if spec.exclusive_min else v < spec.min):
        op = ">" if spec.exclusive_min else ">="
        return f"{spec.name} must be {op} {spec.min:g}, got {v!r}"
    if spec.max is not None and (v >= spec.max if spec.exclusive_max else v > spec.max):
        op = "<" if spec.exclusive_max else "<="
        return f"{spec.name} must be {op} {spec.max:g}, got {v!r}"
    return None
