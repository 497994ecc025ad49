"""The SML document (sml layer): the record's values, where each came from, and its edits.

A Document keeps the user's text. ``emit`` returns it, so an unchanged document
round-trips byte for byte; every edit (set a field, add, remove, rewire or rename a
block) splices only the text of the nodes it changes and re-reads the result, so
comments, key order and formatting elsewhere stay as the user wrote them. The graph
and the form projections edit through these same methods.
"""

from __future__ import annotations

import json
import math
import re

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..base.errors import Diagnostic, ScellisError
from .loader import MAX_BYTES, MAX_LINE, Loaded, compose, load, plain_scalar, walk

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./@-]*$")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
SECTIONS = ("optimizer", "scheduler", "loss", "grad_clip", "precision", "data", "eval")


def render(v) -> str:
    """A value as flow-style YAML that reads back as the same value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".inf" if v > 0 else "-.inf"
        s = repr(v)
        return s if any(c in s for c in ".en") else s + ".0"
    if isinstance(v, str):
        return v if _PLAIN.match(v) and v.lower() not in _RESERVED else json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(render(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{render(str(k))}: {render(x)}" for k, x in v.items()) + "}"
    raise ScellisError(f"cannot write a {type(v).__name__} into SML")


def _flow(node: Node) -> bool:
    return isinstance(node, ScalarNode) or bool(node.flow_style)


def _last_end(node: Node) -> int:
    while not _flow(node) and node.value:
        node = node.value[-1][1] if isinstance(node, MappingNode) else node.value[-1]
    return node.end_mark.index


def _marks(root: Node):
    """Every distinct mark of the node tree (keys and values), once each."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for m in (n.start_mark, n.end_mark):
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield m
        if isinstance(n, MappingNode):
            stack.extend(x for pair in n.value for x in pair)
        elif isinstance(n, SequenceNode):
            stack.extend(n.value)


class Document:
    """One parsed SML file: ``data`` (plain values), ``text`` and the node of every path."""

    def __init__(self, text: str, file: str, loaded: Loaded):
        self.text, self.file = text, file
        self._set(loaded)

    def _set(self, loaded: Loaded) -> None:
        if not isinstance(loaded.data, dict):
            node = loaded.nodes.get(())
            line, col = (node.start_mark.line + 1, node.start_mark.column + 1) if node else (1, 1)
            raise Diagnostic(
                "an SML document is a mapping of sections",
                self.file,
                line,
                col,
                "start with 'model: namespace/name@1'",
            )
        self.data: dict = loaded.data
        self._nodes, self._keys = loaded.nodes, loaded.keys

    # -- where things are -------------------------------------------------------------
    def node(self, path: tuple) -> Node | None:
        return self._nodes.get(tuple(path))

    def where(self, path: tuple, key: bool = False) -> tuple[int, int]:
        """1-based (line, col) of the value at ``path`` (its key with ``key``), or the
        nearest enclosing node that exists."""
        path = tuple(path)
        while True:
            n = (self._keys if key else self._nodes).get(path) or self._nodes.get(path)
            if n is not None or not path:
                break
            path = path[:-1]
        if n is None:
            return 1, 1
        return n.start_mark.line + 1, n.start_mark.column + 1

    def diag(self, path: tuple, message: str, fix: str | None = None, key: bool = False):
        line, col = self.where(path, key)
        return Diagnostic(message, self.file, line, col, fix)

    @property
    def blocks(self) -> dict:
        b = self.data.get("blocks")
        return b if isinstance(b, dict) else {}

    # -- edits --------------------------------------------------------------------------
    def _splice(self, edits: list[tuple[int, int, str]]) -> None:
        text = self.text
        for start, end, new in sorted(edits, reverse=True):
            text = text[:start] + new + text[end:]
        loaded = load(text, self.file)
        self.text = text
        self._set(loaded)

    def _replace_scalar(self, node: ScalarNode, new: str) -> bool:
        """Put ``new`` (one flow scalar) where ``node`` is written, without reading the
        whole document again: the new text's scalar replaces the node's value and every
        mark after it moves by the length difference. Returns False (nothing changed)
        when the edit is not that simple; the caller then splices and re-reads.

        An edit through the form sets one value at a time, and reading the document is
        most of an edit's cost, so this keeps Model View's edits within a frame's budget.
        """
        start, end = node.start_mark.index, node.end_mark.index
        old = self.text[start:end]
        if "\n" in new or "\n" in old or node.anchor or old[:1] in "&!*":
            return False
        tiny = plain_scalar(new)
        if tiny is None:
            try:
                tiny = compose(new, self.file)
            except Diagnostic:
                return False
            if isinstance(tiny, ScalarNode) and tiny.end_mark.index != len(new):
                return False  # the value is followed by something else (a comment)
        if not isinstance(tiny, ScalarNode) or tiny.anchor:
            return False
        text = self.text[:start] + new + self.text[end:]
        lo = text.rfind("\n", 0, start) + 1
        hi = text.find("\n", start)
        if len(text) > MAX_BYTES or (len(text) if hi < 0 else hi) - lo > MAX_LINE:
            return False  # the full read reports the size limits
        delta, line = len(new) - len(old), node.start_mark.line
        root = self._nodes[()]
        for m in _marks(root):
            if m.index >= end:
                m.index += delta
                m.pointer = m.index
                if m.line == line:
                    m.column += delta
            m.buffer = text
        node.tag, node.value, node.style = tiny.tag, tiny.value, tiny.style
        try:
            loaded = walk(root, self.file)
        except Diagnostic:
            # a value the guards refuse (a tag, say): read the spliced text in full so
            # the error is reported exactly as a fresh parse would report it
            load(text, self.file)
            raise
        self.text = text
        self._set(loaded)
        return True

    def retext(self, text: str) -> bool:
        """Take ``text`` as this document's text when it differs from the current one
        inside one plain scalar value (a value typed in the code view), without reading
        the whole text again; the result is what ``parse(text)`` gives. Returns False,
        with nothing changed, when the change is anything else: the caller parses."""
        old = self.text
        if text == old:
            return True
        a = 0
        n = min(len(old), len(text))
        while a < n and old[a] == text[a]:
            a += 1
        b = 0
        while b < n - a and old[-1 - b] == text[-1 - b]:
            b += 1
        hi = len(old) - b
        for path, node in self._nodes.items():
            if not isinstance(node, ScalarNode) or node.style is not None:
                continue
            start, end = node.start_mark.index, node.end_mark.index
            if start <= a and hi <= end:
                new = text[start : end + len(text) - len(old)]
                shared = sum(m is node for m in self._nodes.values()) > 1
                if shared or not path or plain_scalar(new) is None:
                    return False
                return self._replace_scalar(node, new)
        return False

    def _line_end(self, idx: int) -> int:
        j = self.text.find("\n", idx - 1 if idx and self.text[idx - 1] == "\n" else idx)
        return len(self.text) if j < 0 else j + 1

    def _insert_key(self, parent: tuple, key: str, value) -> tuple[int, int, str]:
        node = self.node(parent)
        if not isinstance(node, MappingNode):
            raise ScellisError(f"{'.'.join(map(str, parent)) or 'the document'} is not a mapping")
        if node.flow_style:
            close = node.end_mark.index - 1
            body = self.text[node.start_mark.index + 1 : close]
            p = node.start_mark.index + 1 + len(body.rstrip())
            sep = ", " if node.value else ""
            return p, p, f"{sep}{key}: {render(value)}"
        col = node.value[0][0].start_mark.column
        at = self._line_end(_last_end(node))
        lead = "" if at == 0 or self.text[at - 1] == "\n" else "\n"
        return at, at, f"{lead}{' ' * col}{key}: {render(value)}\n"

    def set(self, path: tuple, value) -> None:
        """Set the value at ``path``, adding the key to its mapping when absent."""
        path = tuple(path)
        node = self.node(path)
        if node is None:
            self._splice([self._insert_key(path[:-1], path[-1], value)])
            return
        if sum(n is node for n in self._nodes.values()) > 1:
            raise ScellisError(
                f"{'.'.join(map(str, path))} is shared through an alias; edit the anchor"
            )
        new = render(value)
        if isinstance(node, ScalarNode) and isinstance(value, (bool, int, float, str)):
            if self._replace_scalar(node, new):
                return
        self._splice([(node.start_mark.index, node.end_mark.index, new)])

    def remove_key(self, path: tuple) -> None:
        """Delete the key at ``path`` and its value (nothing when it is absent): its lines
        in a block mapping, its entry in a flow one (that mapping is written again)."""
        path = tuple(path)
        parent = self.node(path[:-1])
        if not isinstance(parent, MappingNode) or self.node(path) is None:
            return
        if parent.flow_style:
            kept = {k: v for k, v in self._value(path[:-1]).items() if k != path[-1]}
            self._splice([(parent.start_mark.index, parent.end_mark.index, render(kept))])
            return
        for k, v in parent.value:
            if k.value == path[-1]:
                start = self.text.rfind("\n", 0, k.start_mark.index) + 1
                self._splice([(start, self._line_end(_last_end(v)), "")])
                return

    def _value(self, path: tuple):
        value = self.data
        for key in path:
            value = value[key]
        return value

    def _block_path(self, block: str) -> tuple:
        if block in SECTIONS:
            return (block,)
        if block not in self.blocks:
            raise ScellisError(f"no block named {block!r}")
        return ("blocks", block)

    def set_field(self, block: str, field: str, value) -> None:
        """A form edit: one field of a block (or of a pipeline section such as optimizer)."""
        self.set(self._block_path(block) + (field,), value)

    def rewire(self, block: str, inputs: str | list[str]) -> None:
        """A graph edit: what ``block`` reads."""
        self.set(self._block_path(block) + ("in",), inputs)

    def _blocks_node(self) -> MappingNode:
        node = self.node(("blocks",))
        if not isinstance(node, MappingNode) or node.flow_style or not node.value:
            raise ScellisError("blocks must be a block-style mapping (one block per line) to edit")
        return node

    def add_block(
        self, name: str, block_id: str, inputs=None, after: str | None = None, **fields
    ) -> None:
        """Insert a block after ``after`` (default: the last block)."""
        if not NAME.match(name) or name in self.blocks:
            raise ScellisError(f"{name!r} is not a new block name")
        node = self._blocks_node()
        pairs = node.value
        if after is not None:
            pairs = [(k, v) for k, v in pairs if k.value == after]
            if not pairs:
                raise ScellisError(f"no block named {after!r}")
        key, val = pairs[-1]
        body = {"block_id": block_id, **({"in": inputs} if inputs is not None else {}), **fields}
        col = key.start_mark.column
        if _flow(val):
            line = f"{' ' * col}{name}: {render(body)}\n"
            if self.text[val.start_mark.index : val.start_mark.index + 2] == "{ ":
                line = line.replace(": {", ": { ", 1)[:-2] + " }\n"
        else:
            inner = " " * val.value[0][0].start_mark.column
            line = f"{' ' * col}{name}:\n" + "".join(
                f"{inner}{k}: {render(v)}\n" for k, v in body.items()
            )
        at = self._line_end(_last_end(val))
        lead = "" if self.text[at - 1] == "\n" else "\n"
        self._splice([(at, at, lead + line)])

    def remove_block(self, name: str) -> None:
        """Delete a block's lines (blocks that read it are then reported by validate)."""
        self._block_path(name)
        for k, v in self._blocks_node().value:
            if k.value == name:
                start = self.text.rfind("\n", 0, k.start_mark.index) + 1
                self._splice([(start, self._line_end(_last_end(v)), "")])
                return

    def add_section(self, key: str, value, comment: str | None = None) -> None:
        """Append a top-level key at the end of the text, after a blank line and
        ``comment`` (a ``# ...`` line) when given; an existing key is set in place."""
        if key in self.data:
            self.set((key,), value)
            return
        lead = "" if not self.text or self.text.endswith("\n") else "\n"
        note = f"{comment}\n" if comment else ""
        at = len(self.text)
        self._splice([(at, at, f"{lead}\n{note}{key}: {render(value)}\n")])

    def remove_section(self, key: str) -> None:
        """Delete a top-level key, its value's lines and the comment lines right above
        it with one blank line before them (nothing when the key is absent)."""
        root = self.node(())
        for k, v in root.value if isinstance(root, MappingNode) else []:
            if k.value == key:
                start = self.text.rfind("\n", 0, k.start_mark.index) + 1
                while start and self.text[: start - 1].rpartition("\n")[2].startswith("#"):
                    start = self.text.rfind("\n", 0, start - 1) + 1
                if self.text[max(0, start - 2) : start] == "\n\n":
                    start -= 1
                self._splice([(start, self._line_end(_last_end(v)), "")])
                return

    def rename_block(self, old: str, new: str) -> None:
        """Rename a block and every ``in:`` and ``outputs`` reference to it."""
        self._block_path(old)
        if not NAME.match(new) or new in self.blocks or new in (self.data.get("inputs") or {}):
            raise ScellisError(f"{new!r} is not a free block name")
        key = self._keys[("blocks", old)]
        edits = [(key.start_mark.index, key.end_mark.index, new)]
        refs = [("blocks", b, "in") for b in self.blocks] + [("outputs",)]
        for path in refs:
            for n in self._scalars(self.node(path)):
                if n.value == old:
                    edits.append((n.start_mark.index, n.end_mark.index, render(new)))
        self._splice(edits)

    @staticmethod
    def _scalars(node: Node | None) -> list[ScalarNode]:
        if isinstance(node, ScalarNode):
            return [node]
        if isinstance(node, SequenceNode):
            return [n for n in node.value if isinstance(n, ScalarNode)]
        if isinstance(node, MappingNode):
            return [v for _, v in node.value if isinstance(v, ScalarNode)]
        return []


def parse(text: str | bytes, file: str = "<input>") -> Document:
    """Parse SML text (or UTF-8 bytes); raises Diagnostic with file:line:col."""
    loaded = load(text, file)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return Document(text, file, loaded)


def emit(doc: Document) -> str:
    """The document's SML text: the user's own bytes, edits spliced in."""
    return doc.text
