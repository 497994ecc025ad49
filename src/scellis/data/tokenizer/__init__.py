"""Tokenizers from ``tokenizer.json`` (data layer), pure Python so the tab has them too.

``Tokenizer.from_file(path)`` reads the file Hugging Face models ship: byte-level BPE
as GPT-2 uses it (GPT-2's pre-tokenizer regex, written with ``unicodedata``) and
SentencePiece-style BPE as the Llama family uses it (``▁`` for spaces, byte fallback
``<0xNN>``), and the ``Split``-regex byte-level files of Llama 3 and Qwen2 (their
``\\p{L}``/``\\p{N}`` patterns translated for ``re`` by ``uregex``), and BERT's
WordPiece files, with added and special tokens. ``load`` is the same with a cache.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ...base.files import read_file
from .spec import MAX_BYTES
from .tokenizer import Tokenizer

_LOADED: dict[str, Tokenizer] = {}  # by the sha256 of the file's bytes
_KEEP = 8  # tokenizers the cache holds (a big one is hundreds of MB)


def load(path) -> Tokenizer:
    """The tokenizer of ``path`` (a tokenizer.json, or a folder holding one), cached by
    its bytes' sha256 (``Tokenizer.digest``): the bytes hashed are the bytes read."""
    path = Path(path)
    if path.is_dir():
        path = path / "tokenizer.json"
    data = read_file(path, limit=MAX_BYTES)
    digest = hashlib.sha256(data).hexdigest()
    if digest not in _LOADED:
        tok = Tokenizer.from_bytes(data, str(path))
        tok.digest = digest
        while len(_LOADED) >= _KEEP:
            del _LOADED[next(iter(_LOADED))]
        _LOADED[digest] = tok
    return _LOADED[digest]


__all__ = ["Tokenizer", "load"]
