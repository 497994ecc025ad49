"""The catalog seen through SML's registry protocol (catalog layer).

SML validates a record against any object with ``ids``, ``kind_of``, ``fields``,
``doc`` and ``infer_shape``; this adapter answers from the catalog registry, so a
user's own entries validate exactly like the built-ins. A scheduler's step count
(``total_steps``, ``t_max``) may be left out: the run derives it from epochs and
the data, so SML does not require it.
"""

from __future__ import annotations

from ..sml.registry import FieldInfo
from . import registry
from .sml_shapes import infer_shape as _infer_shape

DERIVED = {"scheduler": ("total_steps", "t_max")}


def _type(t: str) -> str:
    """The registry's type names (``UnionType[int, NoneType]``) as SML's (``int | None``)."""
    if t.startswith(("UnionType[", "Union[", "Optional[")):
        inner = t[t.index("[") + 1 : -1].split(", ")
        alts = ["None" if a == "NoneType" else a for a in inner]
        return " | ".join(alts + (["None"] if t.startswith("Optional") else []))
    return t


class CatalogRegistry:
    """SML's Registry over ``scellis.catalog`` (built-in and registered user entries)."""

    def ids(self, kind: str) -> list[str]:
        return [e.id for e in registry.entries(kind)]

    def kind_of(self, id: str) -> str | None:
        for e in registry.entries():
            if e.id == id:
                return e.kind
        return None

    def fields(self, id: str) -> list[FieldInfo]:
        entry = registry.lookup(id)
        derived = DERIVED.get(entry.kind, ())
        return [
            FieldInfo(
                s.name,
                _type(s.type),
                s.default,
                s.required and s.name not in derived,
                s.doc,
                s.min,
                s.max,
                s.exclusive_min,
                s.choices,
                s.exclusive_max,
            )
            for s in registry.schema(entry)
        ]

    def doc(self, id: str) -> str:
        return registry.lookup(id).doc.splitlines()[0] if registry.lookup(id).doc else ""

    def multiplicative(self, id: str) -> bool:
        return bool(getattr(registry.lookup(id).impl, "multiplicative", False))

    def multiplicative_parts(self, id: str) -> bool:
        return bool(getattr(registry.lookup(id).impl, "multiplicative_parts", False))

    def infer_shape(self, id: str, fields: dict, inputs: list) -> list | None:
        return _infer_shape(id, fields, inputs)


def catalog_registry() -> CatalogRegistry:
    return CatalogRegistry()
