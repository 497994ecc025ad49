"""The WordPiece model of ``tokenizer.json`` (data layer), as BERT's tokenizers use it.

Greedy longest-match-first: the longest prefix of the word in the vocabulary, then the
longest ``##``-prefixed continuation, and so on; a word with any part not found (or
longer than ``max_input_chars_per_word``) is the unknown token as a whole.
"""

from __future__ import annotations

from ...base.errors import ScellisError, shown


class WordPiece:
    def __init__(self, spec: dict):
        self.vocab: dict[str, int] = dict(spec.get("vocab") or {})
        # the values were checked by ``spec``; null means the default, as a missing field
        self.unk = spec.get("unk_token") or "[UNK]"
        prefix = spec.get("continuing_subword_prefix")
        self.prefix = "##" if prefix is None else prefix
        limit = spec.get("max_input_chars_per_word")
        self.max_chars = 100 if limit is None else limit
        if self.unk not in self.vocab:
            raise ScellisError(
                f"tokenizer.json: WordPiece unk_token {shown(self.unk, 40)} is not in the vocab"
            )
        self.cache: dict[str, list[int]] = {}

    def tokenize(self, word: str) -> list[int]:
        hit = self.cache.get(word)
        if hit is not None:
            return hit
        ids = self._split(word)
        if len(self.cache) < 10_000:
            self.cache[word] = ids
        return ids

    def _split(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.vocab[self.unk]]
        out, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                sub = word[start:end] if start == 0 else self.prefix + word[start:end]
                if sub in self.vocab:
                    found = self.vocab[sub]
                    break
                end -= 1
            if found is None:
                return [self.vocab[self.unk]]
            out.append(found)
            start = end
        return out
