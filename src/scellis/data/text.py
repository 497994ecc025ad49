"""Text (data layer): a character vocabulary (or a ``tokenizer.json``), next-token windows,
the text connector."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass

from ..base.errors import ScellisError
from ..base.files import read_file
from .bounds import check_window_values, window_count
from .shuffle import shuffled_order


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


class TokenizerVocab:
    """A ``tokenizer.json`` tokenizer in the vocabulary's shape: encode (no special
    tokens), decode, and its size; ``digest`` is the sha256 of the file's bytes."""

    def __init__(self, tokenizer, digest: str):
        self.tokenizer = tokenizer
        self.digest = digest

    def __len__(self) -> int:
        return self.tokenizer.vocab_size

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(list(ids))


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


@dataclass
class TextDataset:
    """A char-level corpus: vocabulary, chronological windows of ids, and its version."""

    vocab: CharVocab | TokenizerVocab
    x_train: list
    y_train: list
    x_val: list
    y_val: list
    cut: int  # ids [0, cut) train, [cut, len) validate
    digest: str

    def train_order(self, seed: int, epoch: int) -> list[int]:
        """The training windows' order of ``epoch`` from the Philox ``shuffle`` stream."""
        return shuffled_order(len(self.x_train), seed, epoch)


def read_text(path) -> str:
    """A UTF-8 text file without the byte-order mark spreadsheets write first (it is no
    text: a CSV header's first name would carry it); bad bytes are refused with their
    ``file:line:col``."""
    data = read_file(path)
    try:
        text = data.decode("utf-8")
        return text[1:] if text.startswith("\ufeff") else text
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ScellisError(
            f"{path}:{line}:{col}: not UTF-8 (byte 0x{data[e.start]:02x}); save the file as "
            "UTF-8 (e.g. iconv -f latin1 -t utf-8)"
        ) from None


def universal_newlines(text: str) -> str:
    """``\r\n`` and a lone ``\r`` as ``\n``, as Python's text mode reads a file."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def next_char_windows(ids: list[int], context: int, stride: int) -> tuple[list, list]:
    """Every (ids[s : s+context], ids[s+1 : s+context+1]) for s = 0, stride, ... that fits."""
    starts = range(0, len(ids) - context, stride)
    return [ids[s : s + context] for s in starts], [ids[s + 1 : s + context + 1] for s in starts]


def text_dataset(
    text: str, context: int, stride: int | None = None, val_fraction: float = 0.1,
    vocab: TokenizerVocab | None = None,
) -> TextDataset:  # fmt: skip
    """Char vocabulary over the whole text (or ``vocab``, a tokenizer's); a chronological
    split; windows inside each part. Line ends are read as ``\n`` whatever wrote them
    (``\r\n``, ``\r``: Python's universal newlines), here where every text corpus passes,
    so a Windows file neither learns ``\r`` as a character nor versions differently from
    its Unix copy; a text without ``\r`` is untouched.

    The version is the sha256 of ``{"format": "scellis.text/1", "context": ..,
    "stride": .., "val_fraction": ..}`` (sorted keys, compact JSON; with a tokenizer
    also ``"tokenizer": <sha256 of its file>``), a newline, then the text in UTF-8.
    """
    stride = stride or context
    if context < 1 or stride < 1:
        raise ScellisError("context and stride must be >= 1")
    if not 0.0 < val_fraction < 1.0:
        raise ScellisError(f"val_fraction must lie in (0, 1), got {val_fraction}")
    text = universal_newlines(text)
    unit = "characters" if vocab is None else "tokens"
    vocab = vocab or CharVocab(text)
    ids = vocab.encode(text)
    cut = int(round(len(ids) * (1.0 - val_fraction)))
    if cut < context + 1 or len(ids) - cut < context + 1:
        raise ScellisError(
            f"{len(ids)} {unit} split {cut}/{len(ids) - cut} are too few for a context "
            f"of {context} in both parts"
        )
    head = {"format": "scellis.text/1", "context": context, "stride": stride}
    head["val_fraction"] = val_fraction
    if isinstance(vocab, TokenizerVocab):
        head["tokenizer"] = vocab.digest
    h = hashlib.sha256(json.dumps(head, sort_keys=True, separators=(",", ":")).encode())
    h.update(b"\n" + text.encode("utf-8"))
    # a window and its target: context + 1 ids apart from the split's edge
    count = window_count(cut, context + 1, stride) + window_count(
        len(ids) - cut, context + 1, stride
    )
    check_window_values(count, 2 * context, len(ids), "the text")
    xt, yt = next_char_windows(ids[:cut], context, stride)
    xv, yv = next_char_windows(ids[cut:], context, stride)
    return TextDataset(vocab, xt, yt, xv, yv, cut, h.hexdigest())
