"""Catalog registry (catalog layer): Config types + implementations, found by id.

A Config is a frozen dataclass; each field's metadata (made with ``field``) carries
its doc and range, so the SML schema and Model View's form are derived from the
type, never written twice. Ids look like ``nn/linear`` or ``training/optimizer/adam``.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass
from typing import Any

from ..base.errors import ScellisError
from ..sml.registry import out_of_range

KINDS = ("block", "optimizer", "scheduler", "loss", "codec", "peft", "metric")


def field(
    default: Any = dataclasses.MISSING,
    *,
    doc: str = "",
    min: float | None = None,
    max: float | None = None,
    exclusive_min: bool = False,
    exclusive_max: bool = False,
    choices: tuple | None = None,
    default_factory: Any = dataclasses.MISSING,
    quiet: bool = False,
):
    """A Config field with its doc and range (``min``/``max``; ``exclusive_min`` for > min,
    ``exclusive_max`` for < max). A tuple field's range bounds each of its numbers.

    ``quiet``: the printed block rung (``scellis compile --emit blocks``) leaves the field
    out while it holds its default, so an option added to a block later does not change
    how the records that never use it print."""
    meta = {"doc": doc, "min": min, "max": max, "exclusive_min": exclusive_min, "choices": choices}
    if exclusive_max:
        meta["exclusive_max"] = True
    if quiet:
        meta["quiet"] = True
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str
    default: Any
    required: bool
    doc: str
    min: float | None
    max: float | None
    exclusive_min: bool
    choices: tuple | None
    exclusive_max: bool = False

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Entry:
    id: str
    kind: str
    config: type
    impl: Any
    doc: str = ""
    builtin: bool = True


_ENTRIES: dict[str, Entry] = {}


def register(
    id: str, kind: str, config: type, impl: Any, doc: str = "", builtin: bool = False
) -> Entry:
    """Add a catalog entry; user extensions call this exactly like the built-ins do."""
    if kind not in KINDS:
        raise ScellisError(f"unknown catalog kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not dataclasses.is_dataclass(config):
        raise ScellisError(f"the config of {id!r} must be a dataclass")
    if id in _ENTRIES:
        raise ScellisError(f"catalog id {id!r} is registered twice")
    entry = Entry(id, kind, config, impl, doc or (config.__doc__ or "").strip(), builtin)
    _ENTRIES[id] = entry
    return entry


def lookup(id: str, kind: str | None = None) -> Entry:
    e = _ENTRIES.get(id)
    if e is None or (kind is not None and e.kind != kind):
        pool = [k for k, v in _ENTRIES.items() if kind is None or v.kind == kind]
        close = difflib.get_close_matches(id, pool, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ScellisError(f"unknown {kind or 'catalog'} id {id!r}{hint}")
    return e


def entries(kind: str | None = None) -> list[Entry]:
    return sorted(
        (e for e in _ENTRIES.values() if kind is None or e.kind == kind), key=lambda e: e.id
    )


def _type_name(tp: Any) -> str:
    if isinstance(tp, str):
        return tp
    if tp is Ellipsis:  # tuple[int, ...]: any length, as SML's type check reads it
        return "..."
    origin = typing.get_origin(tp)
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(tp))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(tp, "__name__", str(tp))


def schema(entry_or_config) -> list[FieldSpec]:
    """The fields of an entry's Config, with types, defaults, ranges and docs."""
    config = entry_or_config.config if isinstance(entry_or_config, Entry) else entry_or_config
    hints = typing.get_type_hints(config)
    out = []
    for f in dataclasses.fields(config):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING  # type: ignore[misc]
        default = None
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        m = f.metadata
        out.append(
            FieldSpec(
                f.name,
                _type_name(hints.get(f.name, f.type)),
                default,
                required,
                m.get("doc", ""),
                m.get("min"),
                m.get("max"),
                m.get("exclusive_min", False),
                m.get("choices"),
                m.get("exclusive_max", False),
            )
        )
    return out


def check_config(config) -> None:
    """Range and choice checks of a Config instance; raises ScellisError naming the field."""
    for spec in schema(type(config)):
        v = getattr(config, spec.name)
        scalar = isinstance(v, (int, float, str)) and not isinstance(v, bool)
        if scalar and spec.choices is not None and v not in spec.choices:
            raise ScellisError(
                f"{spec.name} must be one of {', '.join(map(str, spec.choices))}, got {v!r}"
            )
        if problem := out_of_range(spec, v):
            raise ScellisError(problem)
