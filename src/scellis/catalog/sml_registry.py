"""The catalog seen through SML's registry protocol (catalog layer).

SML validates a record against any object with ``ids``, ``kind_of``, ``fields``,
``doc`` and ``infer_shape``; this adapter answers from the catalog registry, so a
user's own entries validate exactly like the built-ins. A scheduler's step count
(``total_steps``, ``t_max``) may be left out: the run derives it from epochs and
the data, so SML does not require it.
"""

from __future__ import annotations

import dataclasses

from ..base.errors import ScellisError
from ..sml.registry import FieldInfo
from . import registry
from .sml_shapes import infer_shape as _infer_shape

DERIVED = {"scheduler": ("total_steps", "t_max")}


def with_derived_steps(record: dict, total_steps: int) -> dict:
    """``record`` with its scheduler's step count (``total_steps``, ``t_max``) filled in
    from ``total_steps`` (epochs x batches an epoch) where the record leaves it out and
    the scheduler takes it; the record itself when nothing is missing."""
    sched = record.get("scheduler")
    if not isinstance(sched, dict) or not isinstance(sched.get("block_id"), str):
        return record
    try:
        entry = registry.lookup(sched["block_id"], "scheduler")
    except ScellisError:  # an unknown id: validation reports it, located
        return record
    takes = {f.name for f in dataclasses.fields(entry.config)}
    missing = {k: max(1, int(total_steps)) for k in DERIVED["scheduler"]
               if k in takes and sched.get(k) is None}  # fmt: skip
    return {**record, "scheduler": {**sched, **missing}} if missing else record


def _top_level(inner: str) -> list[str]:
    """``inner`` split at the commas outside brackets (``int, tuple[int, int]``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    return parts + [inner[start:].strip()]


def _type(t: str) -> str:
    """The registry's type names (``UnionType[int, NoneType]``) as SML's (``int | None``)."""
    if t.startswith(("UnionType[", "Union[", "Optional[")):
        inner = _top_level(t[t.index("[") + 1 : -1])
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
