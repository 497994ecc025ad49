"""A ``tokenizer.json`` tokenizer in pure Python (data layer): encode and decode as the
``tokenizers`` library does, for the BPE files GPT-2- and Llama-family models ship and
the WordPiece files of BERT encoders.

Encoding splits the text around added tokens (special tokens such as ``<|endoftext|>``
and ``<s>`` match verbatim, longest first; ``lstrip``/``rstrip`` take the whitespace
beside them), normalizes the rest, pre-tokenizes it, runs the BPE model on each
piece and applies the post-processor (a template adding BOS/EOS, or BERT's CLS/SEP).
Decoding maps ids to tokens (special ones skipped on request) and runs the decoder.
The file is read through the bounded JSON reader and its shapes checked by ``spec``
before anything is built from it.
"""

from __future__ import annotations

from pathlib import Path

from ...base.errors import ScellisError
from ...base.files import read_file
from ...base.jsontext import load_json
from . import decode, normalize, pretokenize, spec
from .added import AddedTokens
from .bpe import BPE
from .wordpiece import WordPiece

MODELS = {"BPE": BPE, "WordPiece": WordPiece}


def _template(post: dict):
    """TemplateProcessing's ``single``: None where the text goes, else a token's ids."""
    specials = post.get("special_tokens") or {}
    steps = []
    for item in post["single"]:
        if "Sequence" in item:
            steps.append(None)
        else:
            steps.append(list(specials[item["SpecialToken"]["id"]]["ids"]))

    def run(ids):
        out = []
        for s in steps:
            out.extend(ids if s is None else s)
        return out

    return run


def _post(post: dict | None):
    """A function ids -> ids for a ``post_processor`` entry (checked by ``spec``)."""
    kind = None if post is None else post["type"]
    if kind in (None, "ByteLevel"):
        return lambda ids: ids
    if kind == "TemplateProcessing":
        return _template(post)
    if kind in ("BertProcessing", "RobertaProcessing"):
        cls, sep = post["cls"][1], post["sep"][1]
        return lambda ids: [cls, *ids, sep]
    steps = [_post(s) for s in post["processors"]]  # Sequence

    def chain(ids):
        for s in steps:
            ids = s(ids)
        return ids

    return chain


class Tokenizer:
    """encode(text) -> ids and decode(ids) -> text for one ``tokenizer.json``."""

    def __init__(self, tree: dict):
        spec.check(tree)  # every value below has the shape its builder reads
        model = tree["model"]
        kind = model.get("type") or "BPE"
        self.model = MODELS[kind](model)
        self.normalize = normalize.make(tree.get("normalizer"))
        self.pre = pretokenize.make(tree.get("pre_tokenizer"))
        self.decoder = decode.make(tree.get("decoder"))
        self.post = _post(tree.get("post_processor"))
        added = list(tree.get("added_tokens") or [])
        self.special = {a["id"] for a in added if a.get("special")}
        self.raw_added = AddedTokens([a for a in added if not a.get("normalized", False)])
        # normalized added tokens match the normalized text in their normalized form
        norm = [
            {**a, "content": self.normalize(a["content"])} for a in added if a.get("normalized")
        ]
        self.norm_added = AddedTokens(norm)
        self.tokens = {i: t for t, i in self.model.vocab.items()}
        # a normalized added token's string is its normalized form (it decodes as one)
        self.tokens.update({a["id"]: a["content"] for a in added})
        self.tokens.update({a["id"]: a["content"] for a in norm})
        self.ids = {t: i for i, t in self.tokens.items()}
        self.digest = ""  # the sha256 of the file's bytes, when read by ``load``

    @classmethod
    def from_bytes(cls, data: bytes, what: str) -> Tokenizer:
        """The tokenizer of a tokenizer.json's bytes; errors name ``what`` (its path)."""
        if len(data) > spec.MAX_BYTES:
            raise ScellisError(f"{what}: {len(data)} bytes is over the {spec.MAX_BYTES} cap")
        try:
            return cls(load_json(data, "tokenizer.json"))
        except ScellisError as e:  # the path says which file: the message names the field
            raise ScellisError(f"{what}: {str(e).removeprefix('tokenizer.json: ')}") from None

    @classmethod
    def from_file(cls, path) -> Tokenizer:
        return cls.from_bytes(read_file(path, limit=spec.MAX_BYTES), str(Path(path)))

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
        for piece, tid in self.raw_added.split(text):
            if tid is not None:
                ids.append(tid)
                first = False
                continue
            for part, tid2 in self.norm_added.split(self.normalize(piece)):
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
