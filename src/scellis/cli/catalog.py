"""``scellis catalog`` (cli layer): list catalog entries, their docs and schemas.

``--extensions PATH`` (repeatable: a folder, a ``.py`` file or a dotted module name)
loads user entries first, so they are listed exactly like the built-ins.
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import click

# the built-in codec entries register as their package loads: the listing shows them
from .. import codecs  # noqa: F401
from ..catalog import entries, schema
from ..catalog.registry import KINDS
from .common import extensions_option, load_cli_extensions


def _plain(v):
    """A JSON value for a field default (tuples become lists; odd objects their repr)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return repr(v)


def field_json(spec) -> dict:
    """One schema field as the catalog's JSON lists it."""
    rng = None
    if spec.min is not None or spec.max is not None:
        rng = {"min": spec.min, "max": spec.max, "exclusive_min": spec.exclusive_min}
    return {
        "name": spec.name,
        "type": spec.type,
        "default": None if spec.required else _plain(spec.default),
        "required": spec.required,
        "doc": spec.doc,
        "range": rng,
        "choices": None if spec.choices is None else _plain(spec.choices),
    }


def entry_json(entry) -> dict:
    return {
        "id": entry.id,
        "kind": entry.kind,
        "doc": entry.doc,
        "builtin": entry.builtin,
        "fields": [field_json(s) for s in schema(entry)],
    }


def run(args) -> int:
    load_cli_extensions(args.extensions)
    found = entries(args.kind)
    if args.json:
        print(json.dumps([entry_json(e) for e in found], indent=2))
        return 0
    width = max((len(e.id) for e in found), default=0)
    for e in found:
        origin = "" if e.builtin else "  [user]"
        doc = e.doc.splitlines()[0] if e.doc else ""
        print(f"{e.id:<{width}}  {e.kind:<9}  {doc}{origin}")
    return 0


@click.command("catalog", help="List the catalog: blocks, optimizers, schedulers, losses.")
@click.option("--kind", type=click.Choice(KINDS), help="only entries of this kind")
@click.option("--json", "json_", is_flag=True, help="machine-readable output, with schemas")
@extensions_option
def command(kind, json_, extensions):
    return run(SimpleNamespace(kind=kind, json=json_, extensions=list(extensions)))
