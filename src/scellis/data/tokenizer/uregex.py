"""Rust-regex patterns of ``tokenizer.json`` as Python ``re`` patterns (data layer).

The ``Split`` pre-tokenizers of Llama-3- and Qwen2-style files use ``\\p{L}`` and
``\\p{N}``, which Python's ``re`` lacks (and the third-party ``regex`` module is no
pure-Python wheel). ``translate`` rewrites each Unicode class into an explicit character
class built once from ``unicodedata`` (general categories), and ``\\s``/``\\S`` into the
Unicode White_Space set the Rust crate means; the rest of the syntax (groups,
lookahead, ``(?i:...)``, repetition) means the same in both.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache

from ...base.errors import ScellisError

# Unicode White_Space: what the Rust regex crate's \s means (Python's differs on \x1c-\x1f)
WHITE_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _ranges(cps) -> str:
    """Code points (sorted) as the inside of a character class, ``\\U``-escaped."""
    out, start, prev = [], None, None
    for cp in cps:
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            out.append((start, prev))
            start = prev = cp
    if start is not None:
        out.append((start, prev))
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in out)


@cache
def _by_category() -> dict[str, list[int]]:
    """Every code point (surrogates aside) by general category, in one pass."""
    cat, out = unicodedata.category, {}
    for cp in range(sys.maxunicode + 1):
        if not 0xD800 <= cp <= 0xDFFF:
            out.setdefault(cat(chr(cp)), []).append(cp)
    return out


@cache
def category_class(prefix: str) -> str:
    """The inside of a class of every code point whose general category starts ``prefix``."""
    cps = [cp for c, v in _by_category().items() if c.startswith(prefix) for cp in v]
    return _ranges(sorted(cps))


SPACE_CLASS = _ranges(sorted(ord(c) for c in WHITE_SPACE))
_PROP = re.compile(r"p\{(\^?)([A-Za-z_]+)\}|P\{([A-Za-z_]+)\}|p([A-Z])|P([A-Z])")
_NAMES = {"Letter": "L", "Number": "N", "Punctuation": "P", "Symbol": "S", "Mark": "M",
          "Separator": "Z", "Other": "C"}  # fmt: skip


def _prop(name: str) -> str:
    name = _NAMES.get(name, name)
    if not (1 <= len(name) <= 2 and name[0] in "LNPSMZC"):
        raise ScellisError(f"tokenizer.json: regex class \\p{{{name}}} is not supported")
    return category_class(name)


def translate(pattern: str) -> str:
    """``pattern`` (Rust regex syntax) as an equivalent Python ``re`` pattern."""
    out, i, n, in_class = [], 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            m = _PROP.match(pattern, i + 1)
            if m:
                neg = bool(m.group(1)) or m.group(3) is not None or m.group(5) is not None
                body = _prop(m.group(2) or m.group(3) or m.group(4) or m.group(5))
                if neg and in_class:
                    raise ScellisError(
                        "tokenizer.json: a negated \\P{..} inside [...] is not supported"
                    )
                out.append(body if in_class else f"[{'^' if neg else ''}{body}]")
                i = m.end()
                continue
            nxt = pattern[i + 1]
            if nxt == "s":
                out.append(SPACE_CLASS if in_class else f"[{SPACE_CLASS}]")
            elif nxt == "S":
                if in_class:
                    raise ScellisError("tokenizer.json: \\S inside [...] is not supported")
                out.append(f"[^{SPACE_CLASS}]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


@cache
def compile_rust(pattern: str) -> re.Pattern:
    try:
        return re.compile(translate(pattern))
    except re.error as e:
        raise ScellisError(f"tokenizer.json: regex {pattern!r} is not supported: {e}") from None
