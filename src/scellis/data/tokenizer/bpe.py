"""The BPE model of ``tokenizer.json`` (data layer): merges by rank, byte fallback, unk.

A word starts as its characters (a character the vocabulary lacks becomes its UTF-8
bytes as ``<0xNN>`` tokens with ``byte_fallback``, else the unknown token, runs of
which fuse with ``fuse_unk``); then the adjacent pair with the lowest merge rank is
merged, leftmost first on ties, until no pair has a rank, as the ``tokenizers``
library does. ``ignore_merges`` takes a word the vocabulary holds whole as one token.
"""

from __future__ import annotations

from ...base.errors import ScellisError

CACHE_SIZE = 10_000


def _merges(raw) -> dict[tuple[str, str], int]:
    out = {}
    for rank, m in enumerate(raw or []):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        out.setdefault((a, b), rank)
    return out


class BPE:
    def __init__(self, spec: dict):
        if spec.get("dropout"):
            raise ScellisError("tokenizer.json: BPE dropout is not supported (it is random)")
        self.vocab: dict[str, int] = dict(spec.get("vocab") or {})
        self.ranks = _merges(spec.get("merges"))
        self.unk = spec.get("unk_token")
        self.fuse_unk = bool(spec.get("fuse_unk", False))
        self.byte_fallback = bool(spec.get("byte_fallback", False))
        self.prefix = spec.get("continuing_subword_prefix") or ""
        self.suffix = spec.get("end_of_word_suffix") or ""
        self.ignore_merges = bool(spec.get("ignore_merges", False))
        self.cache: dict[str, list[int]] = {}

    def _unk_id(self, word: str) -> int:
        if self.unk is None or self.unk not in self.vocab:
            raise ScellisError(f"tokenizer: {word!r} has characters outside the vocabulary")
        return self.vocab[self.unk]

    def _symbols(self, word: str) -> list[str | int]:
        """The word's starting symbols: token strings, or an int id for unknown ones."""
        out: list[str | int] = []
        last = len(word) - 1
        for i, ch in enumerate(word):
            s = (self.prefix if i and self.prefix else "") + ch + (self.suffix if i == last else "")
            if s in self.vocab:
                out.append(s)
                continue
            if self.byte_fallback:
                bs = [f"<0x{b:02X}>" for b in ch.encode("utf-8")]
                if all(b in self.vocab for b in bs):
                    out.extend(bs)
                    continue
            unk = self._unk_id(word)
            if self.fuse_unk and out and out[-1] == unk:
                continue
            out.append(unk)
        return out

    def _merge(self, syms: list) -> list:
        ranks = self.ranks
        while len(syms) > 1:
            best, at = None, -1
            for i in range(len(syms) - 1):
                a, b = syms[i], syms[i + 1]
                if isinstance(a, int) or isinstance(b, int):
                    continue
                r = ranks.get((a, b))
                if r is not None and (best is None or r < best):
                    best, at = r, i
            if best is None:
                break
            b = syms[at + 1]
            if self.prefix and b.startswith(self.prefix):  # "a" + "##b" -> "ab"
                b = b[len(self.prefix) :]
            syms[at : at + 2] = [syms[at] + b]
        return syms

    def tokenize(self, word: str) -> list[int]:
        hit = self.cache.get(word)
        if hit is not None:
            return hit
        if self.ignore_merges and word in self.vocab:
            ids = [self.vocab[word]]
        else:
            ids = []
            for s in self._merge(self._symbols(word)):
                if isinstance(s, int):
                    ids.append(s)
                elif s in self.vocab:
                    ids.append(self.vocab[s])
                else:
                    ids.append(self._unk_id(word))
        if len(self.cache) < CACHE_SIZE:
            self.cache[word] = ids
        return ids
