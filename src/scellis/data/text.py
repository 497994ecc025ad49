"""Text (data layer): a character vocabulary and next-character training windows."""

from __future__ import annotations

import math
from collections import Counter

from ..base.errors import ScellisError


class CharVocab:
    """Characters sorted by code point; ids are positions in that order."""

    def __init__(self, text: str):
        if not text:
            raise ScellisError("the text is empty")
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.index[c] for c in text]
        except KeyError as e:
            raise ScellisError(f"character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


def unigram_entropy(ids: list[int]) -> float:
    """Entropy in nats of the id frequencies: the loss of the best context-free model."""
    n = len(ids)
    return -sum(c / n * math.log(c / n) for c in Counter(ids).values())


def char_windows(ids: list[int], context: int, stride: int | None = None):
    """(inputs, targets) rows of ``context`` ids each; targets are inputs shifted by one."""
    stride = stride or context
    xs, ys = [], []
    for s in range(0, len(ids) - context - 1, stride):
        xs.append(ids[s : s + context])
        ys.append(ids[s + 1 : s + context + 1])
    if not xs:
        raise ScellisError(f"{len(ids)} characters are too few for a context of {context}")
    return xs, ys
