"""Tokenizers from ``tokenizer.json`` (data layer), pure Python so the tab has them too.

``Tokenizer.from_file(path)`` reads the file Hugging Face models ship: byte-level BPE
as GPT-2 uses it (GPT-2's pre-tokenizer regex, written with ``unicodedata``) and
SentencePiece-style BPE as the Llama family uses it (``▁`` for spaces, byte fallback
``<0xNN>``), and the ``Split``-regex byte-level files of Llama 3 and Qwen2 (their
``\\p{L}``/``\\p{N}`` patterns translated for ``re`` by ``uregex``), and BERT's
WordPiece files, with added and special tokens. ``load`` is the same with a cache.
"""

from __future__ import annotations

from pathlib import Path

from .tokenizer import Tokenizer

_LOADED: dict[tuple[str, float], Tokenizer] = {}


def load(path) -> Tokenizer:
    """The tokenizer of ``path`` (a tokenizer.json, or a folder holding one), cached."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
    except OSError:
        key = (str(path), 0.0)
    if key not in _LOADED:
        _LOADED[key] = Tokenizer.from_file(path)
    return _LOADED[key]


__all__ = ["Tokenizer", "load"]
