"""Loading a model record for the compiler (ir layer): parse, validate, resolve sizes.

The compiler works on a record dict; ``load_record`` reads and validates an SML file,
loading the extensions its ``extensions:`` section names first (a ``ScellisError``
listing every ``file:line:col`` problem when it is not valid) and
``concrete_inputs`` turns the record's symbolic input shapes (``batch``) into ints.
"""

from __future__ import annotations

from pathlib import Path

from ..base.dtypes import as_dtype
from ..base.errors import ScellisError
from ..base.files import read_file
from ..catalog.extensions import validate_record
from ..sml import parse


def load_record(path: str) -> dict:
    """The validated record of the SML file at ``path``: a file the user names, so its
    extensions load (relative to its folder)."""
    raw = read_file(path)
    doc = parse(raw, path)
    problems = validate_record(doc, Path(path).parent, trusted=True)
    if problems:
        raise ScellisError("; ".join(str(d) for d in problems))
    return doc.data


def batch_size(record: dict, override: int | None = None) -> int:
    b = override if override is not None else int(record.get("batch_size", 32) or 32)
    if b < 1:
        raise ScellisError(f"batch size must be >= 1, got {b}")
    return b


def concrete_inputs(record: dict, batch: int) -> dict[str, tuple]:
    """name -> (shape, dtype) of each record input, every symbolic dim set to ``batch``."""
    out = {}
    for name, spec in (record.get("inputs") or {}).items():
        shape = []
        for d in spec.get("shape", []):
            if isinstance(d, int):
                shape.append(d)
            elif isinstance(d, str):
                shape.append(batch)  # the one symbolic dim the examples use is the batch
            else:
                raise ScellisError(f"input {name!r}: dim {d!r} is neither an int nor a name")
        out[name] = (tuple(shape), as_dtype(spec.get("dtype", "f32")))
    return out
