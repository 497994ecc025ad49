"""Decoders of ``tokenizer.json`` (data layer): tokens back to text.

Each decoder maps a list of token strings to a list of strings (the ``tokenizers``
library's decode chain); the text is their concatenation.
"""

from __future__ import annotations

import re

from ...base.errors import ScellisError
from .pretokenize import CHAR_BYTE

_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def _byte_level(spec: dict):
    def run(tokens: list[str]) -> list[str]:
        data = bytearray()
        for t in tokens:
            if all(c in CHAR_BYTE for c in t):
                data.extend(CHAR_BYTE[c] for c in t)
            else:
                data.extend(t.encode("utf-8"))
        return [data.decode("utf-8", errors="replace")]

    return run


def _metaspace(spec: dict):
    rep = spec.get("replacement", "▁")
    scheme = spec.get("prepend_scheme")
    if scheme is None:
        scheme = "always" if spec.get("add_prefix_space", True) else "never"

    def run(tokens: list[str]) -> list[str]:
        out = []
        for i, t in enumerate(tokens):
            t = t.replace(rep, " ")
            if i == 0 and scheme != "never" and t.startswith(" "):
                t = t[1:]
            out.append(t)
        return out

    return run


def _byte_fallback(spec: dict):
    def run(tokens: list[str]) -> list[str]:
        out, pending = [], bytearray()

        def flush():
            if pending:
                try:
                    out.append(pending.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" for _ in pending)
                pending.clear()

        for t in tokens:
            m = _BYTE.match(t)
            if m:
                pending.append(int(m.group(1), 16))
                continue
            flush()
            out.append(t)
        flush()
        return out

    return run


def _replace(spec: dict):
    pattern = spec.get("pattern") or {}
    if "String" not in pattern:
        raise ScellisError("tokenizer.json: a Replace decoder with a regex is not supported")
    old, new = pattern["String"], spec.get("content", "")
    return lambda tokens: [t.replace(old, new) for t in tokens]


def _strip(spec: dict):
    ch, start, stop = spec.get("content", " "), spec.get("start", 0), spec.get("stop", 0)

    def one(t: str) -> str:
        for _ in range(start):
            if t.startswith(ch):
                t = t[len(ch) :]
        for _ in range(stop):
            if t.endswith(ch):
                t = t[: -len(ch)]
        return t

    return lambda tokens: [one(t) for t in tokens]


_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"),
            (" 're", "'re"))  # fmt: skip


def _wordpiece(spec: dict):
    prefix, cleanup = spec.get("prefix", "##"), spec.get("cleanup", True)

    def run(tokens: list[str]) -> list[str]:
        out = []
        for i, t in enumerate(tokens):
            if i:
                t = t.replace(prefix, "", 1) if t.startswith(prefix) else " " + t
            if cleanup:
                for a, b in _CLEANUP:
                    t = t.replace(a, b)
            out.append(t)
        return out

    return run


def _sequence(spec: dict):
    steps = [make(s) for s in spec.get("decoders") or []]

    def run(tokens: list[str]) -> list[str]:
        for step in steps:
            tokens = step(tokens)
        return tokens

    return run


KINDS = {
    "ByteLevel": _byte_level,
    "Metaspace": _metaspace,
    "ByteFallback": _byte_fallback,
    "Fuse": lambda spec: lambda tokens: ["".join(tokens)],
    "Replace": _replace,
    "Strip": _strip,
    "WordPiece": _wordpiece,
    "Sequence": _sequence,
}


def make(spec: dict | None):
    """A function tokens -> strings for a ``decoder`` entry (None: join with spaces)."""
    if spec is None:
        return lambda tokens: [" ".join(tokens)]
    kind = spec.get("type")
    if kind not in KINDS:
        raise ScellisError(
            f"tokenizer.json: decoder {kind!r} is not supported (supported: {', '.join(KINDS)})"
        )
    return KINDS[kind](spec)
