"""JSON from a user's file, bounded (base layer): one reader for every JSON a user hands us.

``json.loads`` alone trusts its input: a document nested 100,000 deep ends in a
RecursionError (or, when it parses, breaks the first recursive walk over it), a
5,000-digit integer costs quadratic time to convert, and ``NaN``/``Infinity`` are
accepted though JSON has no such values. ``load_json`` refuses each with one
ScellisError naming ``what`` (the file or field the text came from): nesting past
``max_depth``, integers longer than ``max_digits`` digits, the non-JSON constants, and
text that is not UTF-8 or not JSON. The message never quotes the input beyond a
position, so a 5 MB file cannot flood a terminal.
"""

from __future__ import annotations

import json

from .errors import ScellisError

MAX_DEPTH = 64  # every format we read nests a handful of levels; 64 leaves room
MAX_DIGITS = 20  # 64-bit counts and offsets have at most 20 digits


class _Refused(ValueError):
    """A bound crossed while parsing; json re-raises it as it is."""


def _bounded_int(max_digits: int):
    def parse(text: str) -> int:
        if len(text.lstrip("-")) > max_digits:
            raise _Refused(f"holds a {len(text.lstrip('-'))}-digit number")
        return int(text)

    return parse


def _bounded_float(text: str) -> float:
    if len(text) > 400:  # float() is linear, but a 10 MB literal is no number of ours
        raise _Refused(f"holds a {len(text)}-character number")
    return float(text)


def _no_constant(name: str):
    raise _Refused(f"holds {name}, which JSON does not allow")


def depth_of(value, limit: int) -> int:
    """How deeply ``value`` nests (a scalar is 0), counting no further than ``limit`` + 1;
    iterative, so a deep value cannot exhaust Python's stack here."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return deepest


def load_json(data: bytes | str, what: str, *, max_depth: int = MAX_DEPTH,
              max_digits: int = MAX_DIGITS, object_pairs_hook=None):  # fmt: skip
    """The value of the JSON text ``data``; a ScellisError naming ``what`` when it is not
    UTF-8 JSON or crosses a bound (see the module note)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ScellisError(f"{what}: not UTF-8 text (byte {e.start})") from None
    try:
        value = json.loads(
            data,
            parse_int=_bounded_int(max_digits),
            parse_float=_bounded_float,
            parse_constant=_no_constant,
            object_pairs_hook=object_pairs_hook,
        )
    except _Refused as e:
        raise ScellisError(f"{what}: {e}") from None
    except json.JSONDecodeError as e:
        raise ScellisError(
            f"{what}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        ) from None
    except RecursionError:
        raise ScellisError(f"{what}: nests deeper than {max_depth} levels") from None
    except ValueError as e:  # a hook's own refusal
        raise ScellisError(f"{what}: {str(e)[:200]}") from None
    if depth_of(value, max_depth) > max_depth:
        raise ScellisError(f"{what}: nests deeper than {max_depth} levels")
    return value
