"""A ``tokenizer.json`` tokenizer in pure Python (data layer): encode and decode as the
``tokenizers`` library does, for the BPE files GPT-2- and Llama-family models ship and
the WordPiece files of BERT encoders.

Encoding splits the text around added tokens (special tokens such as ``<|endoftext|>``
and ``<s>`` match verbatim, longest first; ``lstrip``/``rstrip`` take the whitespace
beside them), normalizes the rest, pre-tokenizes it, runs the BPE model on each
piece and applies the post-processor (a template adding BOS/EOS, or BERT's CLS/SEP).
Decoding maps ids to tokens (special ones skipped on request) and runs the decoder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...base.errors import ScellisError
from . import decode, normalize, pretokenize
from .bpe import BPE
from .wordpiece import WordPiece

MODELS = {"BPE": BPE, "WordPiece": WordPiece}


def _pattern(tokens: list[dict]):
    """One regex matching any of ``tokens`` (longest first), group i+1 for token i."""
    if not tokens:
        return None
    tokens = sorted(tokens, key=lambda a: -len(a["content"]))
    parts = []
    for a in tokens:
        p = re.escape(a["content"])
        p = (r"\s*" if a.get("lstrip") else "") + p + (r"\s*" if a.get("rstrip") else "")
        parts.append(f"({p})")
    return re.compile("|".join(parts)), [a["id"] for a in tokens]


def _split(text: str, pat) -> list[tuple[str, int | None]]:
    """(piece, None) for plain text and ("", id) for each added token, in order."""
    if pat is None:
        return [(text, None)] if text else []
    rx, ids = pat
    out, at = [], 0
    for m in rx.finditer(text):
        if m.start() > at:
            out.append((text[at : m.start()], None))
        out.append(("", ids[m.lastindex - 1]))
        at = m.end()
    if at < len(text):
        out.append((text[at:], None))
    return out


def _post(spec: dict | None):
    """A function ids -> ids for a ``post_processor`` entry."""
    if spec is None or spec.get("type") == "ByteLevel":
        return lambda ids: ids
    kind = spec.get("type")
    if kind == "TemplateProcessing":
        specials = spec.get("special_tokens") or {}
        steps = []
        for item in spec.get("single") or []:
            if "Sequence" in item:
                steps.append(None)
            else:
                steps.append(list(specials[item["SpecialToken"]["id"]]["ids"]))

        def template(ids):
            out = []
            for s in steps:
                out.extend(ids if s is None else s)
            return out

        return template
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls, sep = spec["cls"][1], spec["sep"][1]
        return lambda ids: [cls, *ids, sep]
    if kind == "Sequence":
        steps = [_post(s) for s in spec.get("processors") or []]

        def chain(ids):
            for s in steps:
                ids = s(ids)
            return ids

        return chain
    raise ScellisError(f"tokenizer.json: post_processor {kind!r} is not supported")


class Tokenizer:
    """encode(text) -> ids and decode(ids) -> text for one ``tokenizer.json``."""

    def __init__(self, spec: dict):
        model = spec.get("model") or {}
        kind = model.get("type", "BPE" if "merges" in model else None)
        if kind not in MODELS:
            raise ScellisError(
                f"tokenizer.json: model {kind!r} is not supported (supported: BPE, WordPiece)"
            )
        self.model = MODELS[kind](model)
        self.normalize = normalize.make(spec.get("normalizer"))
        self.pre = pretokenize.make(spec.get("pre_tokenizer"))
        self.decoder = decode.make(spec.get("decoder"))
        self.post = _post(spec.get("post_processor"))
        added = list(spec.get("added_tokens") or [])
        self.special = {a["id"] for a in added if a.get("special")}
        self.raw_added = _pattern([a for a in added if not a.get("normalized", False)])
        # normalized added tokens match the normalized text in their normalized form
        norm = [
            {**a, "content": self.normalize(a["content"])} for a in added if a.get("normalized")
        ]
        self.norm_added = _pattern(norm)
        self.tokens = {i: t for t, i in self.model.vocab.items()}
        # a normalized added token's string is its normalized form (it decodes as one)
        self.tokens.update({a["id"]: a["content"] for a in added})
        self.tokens.update({a["id"]: a["content"] for a in norm})
        self.ids = {t: i for i, t in self.tokens.items()}

    @classmethod
    def from_file(cls, path) -> Tokenizer:
        path = Path(path)
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ScellisError(f"{path}: cannot read: {e.strerror or e}") from None
        except json.JSONDecodeError as e:
            raise ScellisError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
        if not isinstance(spec, dict):
            raise ScellisError(f"{path}: expected a tokenizer.json object")
        try:
            return cls(spec)
        except ScellisError as e:
            raise ScellisError(f"{path}: {e}") from None

    @property
    def vocab_size(self) -> int:
        return max(self.tokens) + 1 if self.tokens else 0

    def token_to_id(self, token: str) -> int | None:
        return self.ids.get(token)

    def id_to_token(self, i: int) -> str | None:
        return self.tokens.get(i)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids: list[int] = []
        first = True
        for piece, tid in _split(text, self.raw_added):
            if tid is not None:
                ids.append(tid)
                first = False
                continue
            for part, tid2 in _split(self.normalize(piece), self.norm_added):
                if tid2 is not None:
                    ids.append(tid2)
                    first = False
                    continue
                for word in self.pre(part, first):
                    if word:
                        ids.extend(self.model.tokenize(word))
                first = False
        return self.post(ids) if add_special_tokens else ids

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        tokens = []
        for i in ids:
            i = int(i)
            if skip_special_tokens and i in self.special:
                continue
            t = self.tokens.get(i)
            if t is None:
                raise ScellisError(f"token id {i} is outside the vocabulary")
            tokens.append(t)
        return "".join(self.decoder(tokens))
