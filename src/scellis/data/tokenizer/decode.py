"""Decoders of ``tokenizer.json`` (data layer): tokens back to text.

Each decoder maps a list of token strings to a list of strings (the ``tokenizers``
library's decode chain); the text is their concatenation. The entries were checked
by ``spec``; a Sequence step that makes the text far longer is refused.
"""

from __future__ import annotations

import re

from .pretokenize import CHAR_BYTE, metaspace_options
from .spec import check_growth

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
    rep, scheme = metaspace_options(spec)

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
    old, new = spec["pattern"]["String"], spec["content"]
    return lambda tokens: [t.replace(old, new) for t in tokens]


def _strip(spec: dict):
    ch, start, stop = spec.get("content") or " ", spec.get("start") or 0, spec.get("stop") or 0

    def one(t: str) -> str:
        # at most ``start`` leading and ``stop`` trailing ``ch`` go (one character each)
        lead = len(t) - len(t.lstrip(ch))
        t = t[min(lead, start) :]
        trail = len(t) - len(t.rstrip(ch))
        return t[: len(t) - min(trail, stop)]

    return lambda tokens: [one(t) for t in tokens]


_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"),
            (" 're", "'re"))  # fmt: skip


def _wordpiece(spec: dict):
    prefix = "##" if spec.get("prefix") is None else spec["prefix"]
    cleanup = spec.get("cleanup") is not False

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
    steps = [make(s) for s in spec["decoders"]]

    def run(tokens: list[str]) -> list[str]:
        for step in steps:
            before = sum(map(len, tokens))
            tokens = step(tokens)
            check_growth(before, sum(map(len, tokens)), "decoder")
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
    """A function tokens -> strings for a ``decoder`` entry (None: join with spaces)
    that ``spec`` has checked."""
    if spec is None:
        return lambda tokens: [" ".join(tokens)]
    return KINDS[spec["type"]](spec)
