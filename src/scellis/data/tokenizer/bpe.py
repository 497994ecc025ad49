"""The BPE model of ``tokenizer.json`` (data layer): merges by rank, byte fallback, unk.

A word starts as its characters (a character the vocabulary lacks becomes its UTF-8
bytes as ``<0xNN>`` tokens with ``byte_fallback``, else the unknown token, runs of
which fuse with ``fuse_unk``); then the adjacent pair with the lowest merge rank is
merged, leftmost first on ties, until no pair has a rank, as the ``tokenizers``
library does. ``ignore_merges`` takes a word the vocabulary holds whole as one token.
"""

from __future__ import annotations

import heapq

from ...base.errors import ScellisError, shown

CACHE_SIZE = 10_000


def _merges(raw) -> dict[tuple[str, str], int]:
    """(left, right) -> rank; ``spec`` has checked each is "a b" or ["a", "b"]."""
    out = {}
    for rank, m in enumerate(raw or []):
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        out.setdefault((a, b), rank)
    return out


def _mergeable(a, b, ranks) -> bool:
    return isinstance(a, str) and isinstance(b, str) and (a, b) in ranks


class BPE:
    def __init__(self, spec: dict):
        if spec.get("dropout"):  # a number in 0..1 (checked by ``spec``)
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
            raise ScellisError(
                f"tokenizer: {shown(word, 60)} has characters outside the vocabulary"
            )
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
        """Merge by rank with a heap over a linked list: O(n log n) in the word's
        length (a SentencePiece-style file makes the whole text one word)."""
        ranks, n = self.ranks, len(syms)
        if n < 2:
            return syms
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        prev = list(range(-1, n - 1))
        heap = [(ranks[(syms[i], syms[i + 1])], i, syms[i], syms[i + 1]) for i in range(n - 1)
                if _mergeable(syms[i], syms[i + 1], ranks)]  # fmt: skip
        heapq.heapify(heap)
        cut = len(self.prefix)
        while heap:
            _, i, a, b = heapq.heappop(heap)
            j = nxt[i] if syms[i] is not None else -1
            if j < 0 or syms[i] != a or syms[j] != b:
                continue  # a stale entry: one side was merged since
            syms[i] = a + (b[cut:] if cut and b.startswith(self.prefix) else b)
            syms[j] = None
            nxt[i] = nxt[j]
            if nxt[j] >= 0:
                prev[nxt[j]] = i
            for left in (prev[i], i):
                right = nxt[left] if left >= 0 else -1
                if right >= 0 and _mergeable(syms[left], syms[right], ranks):
                    pair = (syms[left], syms[right])
                    heapq.heappush(heap, (ranks[pair], left, *pair))
        return [t for t in syms if t is not None]

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
        if len(self.cache) < CACHE_SIZE and len(word) < 256:
            self.cache[word] = ids
        return ids
