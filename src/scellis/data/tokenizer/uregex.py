"""Rust-regex patterns of ``tokenizer.json`` as Python ``re`` patterns (data layer).

The ``Split`` pre-tokenizers of Llama-3- and Qwen2-style files use ``\\p{L}`` and
``\\p{N}``, which Python's ``re`` lacks (and the third-party ``regex`` module is no
pure-Python wheel). ``translate`` rewrites each Unicode class into an explicit character
class built once from ``unicodedata`` (general categories), and ``\\s``/``\\S`` into the
Unicode White_Space set the Rust crate means; the rest of the syntax (groups,
lookahead, ``(?i:...)``, repetition) means the same in both.

Python's ``re`` backtracks, and a pattern from a shared file can make it backtrack
for hours (``(a+)+$`` on forty ``a``s), where the ``tokenizers`` library stops at a
limit. ``check_regex`` refuses such patterns before any text is split, from the parsed
pattern: a repetition inside a repetition, an alternation inside a repetition (both
give a match exponentially many ways to fail), back-references, and more than
``MAX_DEGREE`` open-ended repetitions in a row (each multiplies the work a failing
match does). What is left is what shipped tokenizers write (GPT-2's, Llama 3's,
Qwen2's and GPT-4o's patterns are one or two repetitions side by side).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache

from ...base.errors import ScellisError, shown

try:  # the parser ``re`` itself uses: the only way to see a pattern's structure
    from re import _parser as _sre
except ImportError:  # Python 3.10
    import sre_parse as _sre  # type: ignore[no-redef]

MAX_REGEX = 4096  # characters of a Split pattern (shipped ones are a few hundred)
MAX_DEGREE = 2  # open-ended repetitions one match may combine (see the module note)
MAX_TRANSLATED = 1 << 19  # the pattern re compiles (GPT-4o's comes to about 143k)
_OPEN = 16  # a repetition allowing more than this many is open-ended for MAX_DEGREE

# Unicode White_Space: what the Rust regex crate's \s means (Python's differs on \x1c-\x1f)
WHITE_SPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _class(ranges) -> str:
    """(first, last) code point ranges as the inside of a character class, merged where
    they touch, ``\\U``-escaped."""
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in out)


@cache
def _by_category() -> dict[str, list[tuple[int, int]]]:
    """Every code point (surrogates aside) by general category, as runs, in one pass
    (runs, not code points: a million list entries would cost memory and time)."""
    cat, out = unicodedata.category, {}
    run_cat, run_start = None, 0
    for cp in range(sys.maxunicode + 2):
        c = None if cp > sys.maxunicode or 0xD800 <= cp <= 0xDFFF else cat(chr(cp))
        if c != run_cat:
            if run_cat is not None:
                out.setdefault(run_cat, []).append((run_start, cp - 1))
            run_cat, run_start = c, cp
    return out


@cache
def category_class(prefix: str) -> str:
    """The inside of a class of every code point whose general category starts ``prefix``."""
    return _class(r for c, v in _by_category().items() if c.startswith(prefix) for r in v)


SPACE_CLASS = _class((ord(c), ord(c)) for c in WHITE_SPACE)
_PROP = re.compile(r"p\{(\^?)([A-Za-z_]+)\}|P\{([A-Za-z_]+)\}|p([A-Z])|P([A-Z])")
_NAMES = {"Letter": "L", "Number": "N", "Punctuation": "P", "Symbol": "S", "Mark": "M",
          "Separator": "Z", "Other": "C"}  # fmt: skip


def _prop(name: str) -> str:
    name = _NAMES.get(name, name)
    if not (1 <= len(name) <= 2 and name[0] in "LNPSMZC"):
        raise ScellisError(f"tokenizer.json: regex class \\p{{{shown(name, 20)}}} is not supported")
    return category_class(name)


def translate(pattern: str) -> str:
    """``pattern`` (Rust regex syntax) as an equivalent Python ``re`` pattern."""
    out, i, n, in_class = [], 0, len(pattern), False
    grown = 0  # characters the \p{..} classes add: each is thousands of ranges
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
                grown += len(body)
                if grown > MAX_TRANSLATED:
                    raise ScellisError(
                        "tokenizer.json: Split regex: its Unicode classes come to more than "
                        f"{MAX_TRANSLATED} characters"
                    )
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


def _refuse(where: str, what: str):
    raise ScellisError(f"tokenizer.json: {where}: {what}")


_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT} | (
    {_sre.POSSESSIVE_REPEAT} if hasattr(_sre, "POSSESSIVE_REPEAT") else set()
)
_SUBS = {_sre.SUBPATTERN, _sre.ASSERT, _sre.ASSERT_NOT} | (
    {_sre.ATOMIC_GROUP} if hasattr(_sre, "ATOMIC_GROUP") else set()
)


def _body(op, av):
    """The sub-pattern of a group, lookaround or atomic group."""
    return av if op is getattr(_sre, "ATOMIC_GROUP", None) else av[-1]


def _degree(items, where: str, repeated: bool) -> int:
    """How many open-ended repetitions a match of ``items`` may combine; refuses the
    shapes that backtrack exponentially (``repeated``: inside a repetition)."""
    total = 0
    for op, av in items:
        if op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS):
            _refuse(where, "back-references are not supported")
        elif op in _REPEATS:
            lo, hi, sub = av
            if repeated and lo != hi:  # each iteration could end in more than one place
                _refuse(where, "a repetition inside a repetition can take exponential time")
            total += _degree(sub, where, repeated or hi > 1) + (hi > _OPEN)
        elif op is _sre.BRANCH:
            if repeated:
                _refuse(where, "an alternation inside a repetition can take exponential time")
            total += max(_degree(alt, where, repeated) for alt in av[1])
        elif op in _SUBS:
            total += _degree(_body(op, av), where, repeated)
    return total


@cache
def _checked(pattern: str) -> str:
    """The Python pattern of ``pattern``, after the checks of ``check_regex``."""
    where = "Split regex"
    if len(pattern) > MAX_REGEX:
        _refuse(where, f"a {len(pattern)}-character pattern is over the {MAX_REGEX} cap")
    python = translate(pattern)
    try:
        tree = _sre.parse(python)
    except (re.error, RecursionError, OverflowError) as e:
        msg = getattr(e, "msg", None) or type(e).__name__
        _refuse(where, f"{shown(pattern, 60)} is not supported: {msg}")
    if _degree(tree, where, False) > MAX_DEGREE:
        _refuse(where, f"more than {MAX_DEGREE} open-ended repetitions in a row can take "
                       "polynomial time on a long text")  # fmt: skip
    return python


def check_regex(pattern, where: str = "Split regex") -> None:
    """Refuse a Split ``pattern`` that is not a string, is too long, does not parse, or
    can backtrack without bound (see the module note)."""
    if not isinstance(pattern, str):
        _refuse(where, "expected a string")
    try:
        _checked(pattern)
    except ScellisError as e:
        raise ScellisError(str(e).replace("Split regex", where, 1)) from None


@cache
def compile_rust(pattern: str) -> re.Pattern:
    python = _checked(pattern)
    try:
        return re.compile(python)
    except (re.error, RecursionError, OverflowError) as e:
        msg = getattr(e, "msg", None) or type(e).__name__
        _refuse("Split regex", f"{shown(pattern, 60)} is not supported: {msg}")
