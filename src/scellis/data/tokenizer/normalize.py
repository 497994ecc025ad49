"""Normalizers of ``tokenizer.json`` (data layer): each maps a string to a string.

The Llama family's files write SentencePiece's space handling as normalizers
(``Prepend("▁")`` then ``Replace(" ", "▁")``); Unicode forms come from ``unicodedata``.
"""

from __future__ import annotations

import unicodedata

from ...base.errors import ScellisError


def _replace(spec: dict):
    pattern = spec.get("pattern") or {}
    if "String" not in pattern:
        raise ScellisError("tokenizer.json: a Replace normalizer with a regex is not supported")
    old, new = pattern["String"], spec.get("content", "")
    return lambda s: s.replace(old, new)


def _prepend(spec: dict):
    pre = spec.get("prepend", "")
    return lambda s: pre + s if s else s


def _strip(spec: dict):
    left, right = spec.get("strip_left", True), spec.get("strip_right", True)

    def run(s: str) -> str:
        if left:
            s = s.lstrip()
        return s.rstrip() if right else s

    return run


def _sequence(spec: dict):
    steps = [make(s) for s in spec.get("normalizers") or []]

    def run(s: str) -> str:
        for step in steps:
            s = step(s)
        return s

    return run


def _form(name: str):
    return lambda spec: lambda s: unicodedata.normalize(name, s)


KINDS = {
    "Replace": _replace,
    "Prepend": _prepend,
    "Strip": _strip,
    "Sequence": _sequence,
    "Lowercase": lambda spec: str.lower,
    "NFC": _form("NFC"),
    "NFD": _form("NFD"),
    "NFKC": _form("NFKC"),
    "NFKD": _form("NFKD"),
}


def make(spec: dict | None):
    """A function str -> str for a ``normalizer`` entry (None: identity)."""
    if spec is None:
        return lambda s: s
    kind = spec.get("type")
    if kind not in KINDS:
        raise ScellisError(
            f"tokenizer.json: normalizer {kind!r} is not supported (supported: {', '.join(KINDS)})"
        )
    return KINDS[kind](spec)
