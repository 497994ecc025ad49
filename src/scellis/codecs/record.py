"""Records as SML text (codecs layer): what an importer builds, written as a model file.

An importer builds the record as plain data (``model``, ``inputs``, ``blocks``,
``outputs`` and any pipeline sections); ``record_text`` writes it in the block style
the example records use, one field per line, and ``check`` parses that text back and
validates it against the catalog, so an importer can never hand out a record that
``scellis validate`` would refuse. Only a record file the user names loads the
extensions its ``extensions:`` section names; an imported record never runs code.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..catalog.extensions import load_record_extensions
from ..catalog.sml_registry import catalog_registry
from ..sml import parse, render, validate

_ORDER = ("model", "inputs", "blocks", "outputs")


def _block(name: str, spec: dict) -> list[str]:
    lines = [f"  {name}:"]
    for k, v in spec.items():
        lines.append(f"    {k}: {render(v)}")
    return lines


def record_text(record: dict, header: str = "") -> str:
    """The record as SML text; ``header`` becomes leading ``#`` comment lines."""
    lines = [f"# {h}" if h else "#" for h in header.splitlines()] if header else []
    lines.append(f"model: {render(record['model'])}")
    lines.append("")
    lines.append("inputs:")
    for name, spec in (record.get("inputs") or {}).items():
        lines.append(f"  {name}: {render(spec)}")
    lines.append("")
    lines.append("blocks:")
    for name, spec in record["blocks"].items():
        lines.extend(_block(name, spec))
    lines.append("")
    lines.append(f"outputs: {render(list(record.get('outputs') or []))}")
    rest = [k for k in record if k not in _ORDER]
    if rest:
        lines.append("")
    for k in rest:
        lines.append(f"{k}: {render(record[k])}")
    return "\n".join(lines) + "\n"


def check(text: str, where: str = "<imported>", base_dir=None, *, trusted: bool = False) -> dict:
    """Parse and validate record text against the catalog; the record's data. A
    ``trusted`` record (a file the user names) loads its extensions first, relative to
    ``base_dir``; any other record that names extensions is refused (see
    ``catalog.extensions``)."""
    doc = parse(text, where)
    problems = load_record_extensions(doc, base_dir or ".", trusted=trusted)
    problems = problems or validate(doc, catalog_registry())
    if problems:
        raise ScellisError(f"the imported record does not validate: {problems[0]}")
    return doc.data
