"""SML text to a located value tree (sml layer): ruamel.yaml round-trip composer plus guards.

The composer gives every node its start and end marks; ``load`` walks that node tree
into plain Python values (dict, list, str, int, float, bool, None) and records the node
behind every path, so diagnostics point at the offending node and edits splice text.
Guards run before and during the walk: size, line length, tabs in indentation, bad
UTF-8, tags outside YAML's core schema, duplicate keys, merge keys, and aliases
(bounded in number and in total expanded nodes, so an alias bomb is refused).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..base.errors import Diagnostic

MAX_BYTES = 1_000_000
MAX_LINE = 10_000
MAX_NODES = 100_000
MAX_ALIASES = 100
MAX_DEPTH = 64
# An integer literal longer than this is refused where it is read: a hex or binary literal
# of a few thousand digits makes an int that cannot even be printed (past 4,300 decimal
# digits), so no later message could name it. Shorter ones reach the field's own range
# check ("must fit in 63 bits").
MAX_INT_DIGITS = 1000

_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {_CORE + t for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_INT = re.compile(r"[-+]?[0-9]+$")
# YAML's double-quoted escapes (\e, \a, \x1b...) put control characters in a string;
# a record that arrives from elsewhere is shown in listings and messages, where one
# would reach the user's terminal as an escape sequence. Tabs and line breaks stay.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass
class Loaded:
    """The values of one document and, per path, the value node and the key node."""

    data: object
    nodes: dict = field(default_factory=dict)  # path tuple -> value Node
    keys: dict = field(default_factory=dict)  # path tuple -> key ScalarNode


def at(node: Node, file: str, message: str, fix: str | None = None) -> Diagnostic:
    m = node.start_mark
    return Diagnostic(message, file, m.line + 1, m.column + 1, fix)


def decode(raw: bytes, file: str) -> str:
    """UTF-8 bytes to text; a bad byte is reported at its line and column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        head = raw[: e.start]
        line = head.count(b"\n") + 1
        col = len(head) - (head.rfind(b"\n") + 1) + 1
        raise Diagnostic(
            f"invalid UTF-8 (byte 0x{raw[e.start]:02x})", file, line, col, "save the file as UTF-8"
        ) from None


def _precheck(text: str, file: str) -> None:
    if len(text) > MAX_BYTES:
        raise Diagnostic(
            f"document is {len(text)} characters; the limit is {MAX_BYTES}", file, 1, 1
        )
    for i, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE:
            raise Diagnostic(
                f"line is {len(line)} characters; the limit is {MAX_LINE}",
                file,
                i,
                MAX_LINE + 1,
                "split the value over several lines",
            )
        indent = len(line) - len(line.lstrip(" \t"))
        tab = line.find("\t", 0, indent)
        if tab >= 0 and line.strip():
            raise Diagnostic("tab in indentation", file, i, tab + 1, "indent with spaces")


def compose(text: str, file: str) -> Node:
    _precheck(text, file)
    try:
        root = YAML(typ="rt").compose(text)
    except MarkedYAMLError as e:
        raise _unclosed(e, text, file) or _marked(e, file) from None
    except RecursionError:
        raise Diagnostic("document nests too deeply", file, 1, 1) from None
    except (YAMLError, ValueError, TypeError, IndexError, AttributeError, KeyError,
            NotImplementedError) as e:  # fmt: skip
        # the parser's own failures are the document's fault, never a traceback
        raise Diagnostic(f"YAML: {e}".splitlines()[0], file, 1, 1) from None
    if root is None:
        raise Diagnostic("empty document", file, 1, 1, "start with 'model: namespace/name@1'")
    return root


def _marked(e: MarkedYAMLError, file: str) -> Diagnostic:
    m = e.problem_mark or e.context_mark
    msg = " ".join(p for p in (e.context, e.problem) if p) or "invalid YAML"
    line, col = (m.line + 1, m.column + 1) if m is not None else (1, 1)
    return Diagnostic(f"YAML: {msg}", file, line, col)


def _unclosed(e: MarkedYAMLError, text: str, file: str) -> Diagnostic | None:
    """A flow ``{`` or ``[`` left open, reported where its close was due.

    The parser notices only at the next block line (its key's ':' cannot sit in a
    flow), one line late and at a column that names nothing; the close belongs at the
    end of the last line with content before that one. A problem on a line indented
    further than the opening one is inside the flow, and is reported as it stands."""
    opened, seen = e.context_mark, e.problem_mark
    if not (e.context or "").startswith("while parsing a flow") or not opened or not seen:
        return None
    lines = text.split("\n")
    if seen.line >= len(lines):  # marks count lines the parser's way ('\r' ends one)
        return None
    ended = seen.index >= len(text) or not lines[seen.line].strip()
    same = seen.line == opened.line
    if not ended and (same or _indent(lines[seen.line]) > _indent(lines[opened.line])):
        return None
    before = range(min(seen.line - (not same), len(lines) - 1), opened.line - 1, -1)
    last = next((i for i in before if _content(lines[i])), opened.line)
    bracket, close = ("{", "}") if "mapping" in e.context else ("[", "]")
    return Diagnostic(
        f"YAML: the '{bracket}' at line {opened.line + 1}, column "
        f"{opened.column + 1} is not closed: expected ',' or '{close}'",
        file, last + 1, len(_content(lines[last])) + 1, f"end the line with '{close}'",
    )  # fmt: skip


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> str:
    """The line less its comment and trailing blanks (a ' #' starts a comment)."""
    cut = line.find(" #")
    return (line if cut < 0 else line[:cut]).rstrip() if not line.lstrip().startswith("#") else ""


# a value typed as one plain token: no spaces, quotes, indicators or comment marks
_TOKEN = re.compile(r"[-+]?[A-Za-z0-9_.][A-Za-z0-9_.+-]*$")
_RESOLVER: list = []


def plain_scalar(text: str) -> ScalarNode | None:
    """The scalar YAML reads from ``text`` when it is one plain token (``32``, ``0.5``,
    ``last``), tagged by the same resolver ``compose`` uses but without running the
    parser (most of the cost of reading one value); None for anything else."""
    if not _TOKEN.match(text):
        return None
    if not _RESOLVER:
        _RESOLVER.append(YAML(typ="rt").resolver)
    return ScalarNode(_RESOLVER[0].resolve(ScalarNode, text, (True, False)), text)


class _Walker:
    def __init__(self, file: str):
        self.file, self.count, self.aliases = file, 0, 0
        self.seen: set[int] = set()
        self.active: set[int] = set()
        self.out = Loaded(None)

    def walk(self, node: Node, path: tuple, depth: int = 0):
        if depth > MAX_DEPTH:
            raise at(node, self.file, f"document nests deeper than {MAX_DEPTH} levels")
        if id(node) in self.active:
            raise at(node, self.file, "recursive alias", "an alias may not refer to its own anchor")
        if id(node) in self.seen:
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise at(node, self.file, f"more than {MAX_ALIASES} aliases")
        self.seen.add(id(node))
        self.count += 1
        if self.count > MAX_NODES:
            raise at(node, self.file, f"document expands to more than {MAX_NODES} nodes")
        tag = node.tag if isinstance(node.tag, str) else str(node.tag)
        if tag not in _ALLOWED_TAGS:
            raise at(
                node,
                self.file,
                f"YAML tag {tag.replace(_CORE, '!!')!r} is not allowed",
                "SML is plain data: remove the tag",
            )
        self.out.nodes[path] = node
        if isinstance(node, ScalarNode):
            return self.scalar(node, tag)
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.walk(n, path + (i,), depth + 1) for i, n in enumerate(node.value)]
            return self.mapping(node, path, depth)
        finally:
            self.active.discard(id(node))

    def mapping(self, node: MappingNode, path: tuple, depth: int) -> dict:
        out: dict = {}
        first: dict = {}
        for k, v in node.value:
            if k.tag == _CORE + "merge":
                raise at(k, self.file, "merge keys ('<<') are not supported", "write the keys out")
            if not isinstance(k, ScalarNode) or k.tag not in _ALLOWED_TAGS:
                raise at(k, self.file, "a key must be a plain name")
            key = k.value
            self.plain_text(k, key)
            if key in first:
                m = first[key].start_mark
                raise at(
                    k,
                    self.file,
                    f"duplicate key {key!r} (first at line {m.line + 1}, column {m.column + 1})",
                    "remove one of them",
                )
            first[key] = k
            self.out.keys[path + (key,)] = k
            out[key] = self.walk(v, path + (key,), depth + 1)
        return out

    def plain_text(self, node: ScalarNode, text: str) -> None:
        if _CONTROL.search(text):
            raise at(node, self.file, "text holds control characters", "remove the escapes")

    def scalar(self, node: ScalarNode, tag: str):
        v = node.value
        if tag == _CORE + "str" or node.style is not None:
            self.plain_text(node, v)
            return v
        if tag == _CORE + "null":
            return None
        if tag == _CORE + "bool":
            return v.lower() == "true"
        if tag == _CORE + "int" and len(v.replace("_", "").lstrip("+-")) > MAX_INT_DIGITS + 2:
            raise at(node, self.file, f"an integer of more than {MAX_INT_DIGITS} digits")
        try:
            if tag == _CORE + "int":
                s = v.replace("_", "")
                if _INT.match(s):
                    return int(s)
                return int(s, 0) if s[:2].lower() in ("0x", "0o", "0b") else int(s, 8)
            s = v.replace("_", "").lower()
            if s.lstrip("+-") in (".inf", ".nan"):
                return math.copysign(math.inf, -1 if s[0] == "-" else 1) if "inf" in s else math.nan
            return float(s)
        except ValueError:
            return v


def walk(root: Node, file: str = "<input>") -> Loaded:
    """The located values of an already composed node tree (with every guard of load)."""
    w = _Walker(file)
    w.out.data = w.walk(root, ())
    return w.out


def load(text: str | bytes, file: str = "<input>") -> Loaded:
    """The located values of one SML document; raises Diagnostic on anything unsafe."""
    if isinstance(text, bytes):
        text = decode(text, file)
    return walk(compose(text, file), file)
