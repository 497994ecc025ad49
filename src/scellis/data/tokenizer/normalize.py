"""Normalizers of ``tokenizer.json`` (data layer): each maps a string to a string.

The entries were checked by ``spec`` (types, fields); a step that makes the text far
longer than it was (replacements chained in a Sequence) is refused as it runs.

The Llama family's files write SentencePiece's space handling as normalizers
(``Prepend("▁")`` then ``Replace(" ", "▁")``); Unicode forms come from ``unicodedata``.
"""

from __future__ import annotations

import unicodedata

from .spec import check_growth
from .uregex import WHITE_SPACE


def _replace(spec: dict):
    old, new = spec["pattern"]["String"], spec["content"]
    return lambda s: s.replace(old, new)


def _prepend(spec: dict):
    pre = spec["prepend"]
    return lambda s: pre + s if s else s


def _strip(spec: dict):
    left, right = spec.get("strip_left") is not False, spec.get("strip_right") is not False

    def run(s: str) -> str:
        if left:
            s = s.lstrip()
        return s.rstrip() if right else s

    return run


# CJK Unified Ideographs and their extensions: BERT puts spaces around each
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))  # fmt: skip


def _bert(spec: dict):
    clean = spec.get("clean_text") is not False  # null or missing: the default, true
    chinese = spec.get("handle_chinese_chars") is not False
    lower = spec.get("lowercase") is not False
    strip = spec.get("strip_accents")
    strip = lower if strip is None else strip

    def one(c: str) -> str:
        if clean:
            if c in "\t\n\r":
                return " "
            if c in ("\0", "\ufffd") or unicodedata.category(c)[0] == "C":
                return ""
            if c in WHITE_SPACE:
                return " "
        if chinese and any(a <= ord(c) <= b for a, b in _CJK):
            return f" {c} "
        return c

    def run(s: str) -> str:
        s = "".join(one(c) for c in s)
        if strip:
            s = "".join(c for c in unicodedata.normalize("NFD", s)
                        if unicodedata.category(c) != "Mn")  # fmt: skip
        return s.lower() if lower else s

    return run


def _sequence(spec: dict):
    steps = [make(s) for s in spec["normalizers"]]

    def run(s: str) -> str:
        for step in steps:
            before, s = len(s), step(s)
            check_growth(before, len(s), "normalizer")
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
    "BertNormalizer": _bert,
    "NFC": _form("NFC"),
    "NFD": _form("NFD"),
    "NFKC": _form("NFKC"),
    "NFKD": _form("NFKD"),
}


def make(spec: dict | None):
    """A function str -> str for a ``normalizer`` entry (None: identity) that ``spec``
    has checked."""
    if spec is None:
        return lambda s: s
    return KINDS[spec["type"]](spec)
