"""Queries over the store's runs (store layer): what ``scellis runs --dataset --record
--model --where`` and the tab's runs list filter by.

A condition (``--where``) is read by a small, bounded grammar, never pasted into SQL::

    condition  := conjunct ("or" conjunct)*
    conjunct   := term ("and" term)*
    term       := "(" condition ")" | value OP number | number OP value
    value      := NAME | "min(" NAME ")" | "max(" NAME ")"
    OP         := "<" | "<=" | ">" | ">=" | "==" | "=" | "!="

A bare metric name is the run's last recorded value of it (what ``scellis runs show``
prints); ``min(NAME)`` and ``max(NAME)`` are its lowest and highest over the run (which
one is the best depends on the metric, so the condition says). A run without a value
of a metric never satisfies a comparison of it. The SQL text is assembled from the
constants below only; every name and number the user typed is a bound parameter.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..base.errors import ScellisError, shown

MAX_CHARS = 400  # far past any condition a person types
MAX_TERMS = 16  # comparisons in one condition
MAX_DEPTH = 8  # nested parentheses

_TOKEN = re.compile(
    r"\s*(?:(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]{0,63})"
    r"|(?P<op><=|>=|==|!=|<|>|=)|(?P<paren>[()]))"
)
_SQL_OP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "=", "=": "=", "!=": "<>"}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "=": "==", "!=": "!="}
_AGGREGATES = ("min", "max")
# one value of a run's metric; the metric's name is the bound parameter
_VALUE_SQL = {
    "last": "(SELECT value FROM metrics WHERE run_id = runs.id AND name = ?"
    " ORDER BY step DESC LIMIT 1)",
    "min": "(SELECT MIN(value) FROM metrics WHERE run_id = runs.id AND name = ?)",
    "max": "(SELECT MAX(value) FROM metrics WHERE run_id = runs.id AND name = ?)",
}
_HASH_PREFIX = re.compile(r"[0-9a-f]{1,64}")
_MODEL_ID = re.compile(r"[\w./@:+-]{1,200}")

WHERE_HELP = (
    "keep runs whose metrics satisfy a condition, e.g. 'val_mae < 1.0 and loss < 2': "
    "metric names, < <= > >= == !=, numbers, and/or, parentheses; a bare name is the "
    "run's LAST recorded value, min(NAME) / max(NAME) its lowest / highest"
)


@dataclass(frozen=True)
class Value:
    """A run's metric as a condition reads it: ``how`` is last, min or max."""

    name: str
    how: str = "last"

    @property
    def label(self) -> str:
        return self.name if self.how == "last" else f"{self.how}({self.name})"


@dataclass(frozen=True)
class Compare:
    value: Value
    op: str  # a key of _SQL_OP, with the value on its left
    number: float


@dataclass(frozen=True)
class Junction:
    word: str  # "and" / "or"
    parts: tuple


class _Reader:
    """A recursive-descent reader over the condition's tokens."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        self.terms = 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None, len(self.text))

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def fail(self, what: str, at: int | None = None):
        at = self.peek()[2] if at is None else at
        raise ScellisError(f"--where: {what} at column {at + 1} of {shown(self.text, 80)!r}")

    def condition(self, depth: int = 0):
        parts = [self.conjunct(depth)]
        while self._word("or"):
            parts.append(self.conjunct(depth))
        return parts[0] if len(parts) == 1 else Junction("or", tuple(parts))

    def conjunct(self, depth: int):
        parts = [self.term(depth)]
        while self._word("and"):
            parts.append(self.term(depth))
        return parts[0] if len(parts) == 1 else Junction("and", tuple(parts))

    def _word(self, word: str) -> bool:
        kind, tok, _ = self.peek()
        if kind == "name" and tok.lower() == word:
            self.i += 1
            return True
        return False

    def term(self, depth: int):
        kind, tok, _ = self.peek()
        if kind == "paren" and tok == "(":
            if depth >= MAX_DEPTH:
                self.fail(f"parentheses nest deeper than {MAX_DEPTH}")
            self.take()
            inner = self.condition(depth + 1)
            if self.peek()[1] != ")":
                self.fail("expected ')'")
            self.take()
            return inner
        self.terms += 1
        if self.terms > MAX_TERMS:
            self.fail(f"more than {MAX_TERMS} comparisons")
        if kind == "num":
            number = self.number()
            op = self.op()
            return Compare(self.value(), _MIRROR[op], number)
        value = self.value()
        op = self.op()
        return Compare(value, op, self.number())

    def value(self) -> Value:
        kind, tok, at = self.take()
        if kind != "name" or tok.lower() in ("and", "or"):
            self.fail("expected a metric name", at)
        if tok.lower() in _AGGREGATES and self.peek()[1] == "(":
            self.take()
            kind, name, at = self.take()
            if kind != "name":
                self.fail(f"expected a metric name inside {tok}( )", at)
            if self.peek()[1] != ")":
                self.fail(f"expected ')' after {tok}({name}")
            self.take()
            return Value(name, tok.lower())
        return Value(tok)

    def op(self) -> str:
        kind, tok, at = self.take()
        if kind != "op":
            self.fail("expected a comparison (< <= > >= == !=)", at)
        return tok

    def number(self) -> float:
        kind, tok, at = self.take()
        if kind != "num":
            self.fail("expected a number", at)
        x = float(tok)
        if not math.isfinite(x):
            self.fail("the number is out of range", at)
        return x


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            at = len(text[pos:]) - len(text[pos:].lstrip()) + pos
            raise ScellisError(
                f"--where: unexpected {text[at]!r} at column {at + 1} of {shown(text, 80)!r} "
                "(metric names, < <= > >= == !=, numbers, and/or, parentheses)"
            )
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


def parse_where(text: str):
    """The condition ``text`` as a tree of ``Compare`` and ``Junction``; a ScellisError
    naming the column for anything outside the grammar or its bounds."""
    if not isinstance(text, str) or not text.strip():
        raise ScellisError("--where is empty: give a condition such as 'val_loss < 1.0'")
    if len(text) > MAX_CHARS:
        raise ScellisError(f"--where is {len(text)} characters long; at most {MAX_CHARS}")
    if "\x00" in text:
        raise ScellisError("--where holds a NUL character")
    reader = _Reader(text)
    tree = reader.condition()
    if reader.i < len(reader.tokens):
        reader.fail(f"unexpected {shown(reader.peek()[1], 20)!r}")
    return tree


def values_of(tree) -> list[Value]:
    """The distinct metric values a condition reads, in the order it names them."""
    if isinstance(tree, Compare):
        return [tree.value]
    out: list[Value] = []
    for part in tree.parts:
        out += [v for v in values_of(part) if v not in out]
    return out


def _sql(tree, params: list) -> str:
    if isinstance(tree, Compare):
        params += [tree.value.name, tree.number]
        return f"{_VALUE_SQL[tree.value.how]} {_SQL_OP[tree.op]} ?"
    joined = f" {'AND' if tree.word == 'and' else 'OR'} ".join(_sql(p, params) for p in tree.parts)
    return f"({joined})"


@dataclass(frozen=True)
class RunQuery:
    """Which runs to list: every given filter must hold. ``dataset`` and ``record`` are
    hash prefixes; ``model`` a model id (without ``@VERSION``, any version of it);
    ``where`` a condition over the run's metrics (see the module note)."""

    dataset: str | None = None
    record: str | None = None
    model: str | None = None
    where: str | None = None
    tree: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        for flag, h in (("--dataset", self.dataset), ("--record", self.record)):
            if h is not None and not _HASH_PREFIX.fullmatch(h.lower()):
                raise ScellisError(f"{flag} {shown(h, 80)!r} is not a hash or a prefix of one "
                                   "(hex digits, as `scellis runs show` prints them)")  # fmt: skip
        if self.model is not None and not _MODEL_ID.fullmatch(self.model):
            raise ScellisError(f"--model {shown(self.model, 80)!r} is not a model id "
                               "(namespace/name, optionally @VERSION)")  # fmt: skip
        if self.where is not None:
            object.__setattr__(self, "tree", parse_where(self.where))

    @property
    def values(self) -> list[Value]:
        """The metric values the condition reads (each run's are listed beside it)."""
        return values_of(self.tree) if self.tree is not None else []

    def sql(self) -> tuple[str, list, str, list]:
        """(extra columns, their parameters, the WHERE clause, its parameters) for a
        ``SELECT runs.*`` over the runs table; every user value is a parameter."""
        cols = ", ".join(f"{_VALUE_SQL[v.how]} AS q{i}" for i, v in enumerate(self.values))
        col_params = [v.name for v in self.values]
        clauses, params = [], []
        for column, h in (("dataset_hash", self.dataset), ("record_hash", self.record)):
            if h is not None:
                clauses.append(f"substr({column}, 1, ?) = ?")
                params += [len(h), h.lower()]
        if self.model is not None:
            if "@" in self.model:
                clauses.append("model_id = ?")
                params.append(self.model)
            else:  # any version of it
                clauses.append("(model_id = ? OR substr(model_id, 1, ?) = ?)")
                params += [self.model, len(self.model) + 1, self.model + "@"]
        if self.tree is not None:
            clauses.append(_sql(self.tree, params))
        return cols, col_params, " AND ".join(clauses) or "1", params
