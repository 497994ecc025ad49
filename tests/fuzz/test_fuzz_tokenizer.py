"""The tokenizer.json reader, fuzzed: random bytes, mutated bytes of a real file made
with the ``tokenizers`` library, and hostile values put anywhere in its JSON (wrong
types, negative or huge ids, nesting, other families' entries). Reading and then
encoding a short text is success or one ScellisError."""

from __future__ import annotations

import json

import pytest
from harness import budget, checked, inputs
from hypothesis import given
from hypothesis import strategies as st

from scellis.data.tokenizer import Tokenizer

tk = pytest.importorskip("tokenizers")

TEXT = "Hello, wörld! <|endoftext|> it's 42  \n日本 😀"
HOSTILE = [None, True, -1, 0, 2**62, 1.5, "", "x", "(a+)+$", [], [None], {}, ["a", "b"],
           "a b", {"type": "Sequence"}, {"type": "Split", "pattern": {"Regex": "(a*)*"}},
           {"String": "a"}, {"Regex": "\\p{L}+"}, [{"id": 1, "content": "x"}],
           {"type": "NFC"}, {"type": "Nope"}, "ByteLevel"]  # fmt: skip


def _real() -> bytes:
    """A small byte-level BPE file with a Split regex, a template and added tokens."""
    t = tk.Tokenizer(tk.models.BPE(unk_token="<unk>"))
    t.normalizer = tk.normalizers.Sequence([tk.normalizers.NFC(), tk.normalizers.Strip()])
    t.pre_tokenizer = tk.pre_tokenizers.Sequence([
        tk.pre_tokenizers.Split(tk.Regex(r" ?\p{L}+| ?\p{N}+|\s+"), behavior="isolated"),
        tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    t.decoder = tk.decoders.ByteLevel()
    t.train_from_iterator([TEXT, "the quick brown fox"] * 3, tk.trainers.BpeTrainer(
        vocab_size=280, special_tokens=["<unk>", "<|endoftext|>"], show_progress=False,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet()))  # fmt: skip
    t.post_processor = tk.processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 1)]
    )
    t.add_tokens([tk.AddedToken("<m>", lstrip=True, rstrip=True)])
    return t.to_str().encode()


@pytest.fixture(scope="module")
def seed() -> bytes:
    return _real()


def _read_and_encode(data: bytes):
    tok = Tokenizer.from_bytes(data, "tokenizer.json")
    return tok.decode(tok.encode(TEXT))


def _paths(doc, at=()):
    """Every place in a JSON document; long vocabularies and merge lists contribute a
    few of their entries (the rest are alike)."""
    yield at
    if isinstance(doc, dict):
        items = list(doc.items())[:6]
    elif isinstance(doc, list):
        items = list(enumerate(doc))[:6]
    else:
        items = []
    for k, v in items:
        yield from _paths(v, (*at, k))


def _replaced(doc, path, value):
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def test_tokenizer_bytes(seed):
    @budget(60)
    @given(inputs(seed, random_size=512))
    def run(data):
        checked("tokenizer", _read_and_encode, data)

    run()


def test_tokenizer_values(seed):
    places = list(_paths(json.loads(seed)))

    @budget(150)
    @given(st.lists(st.tuples(st.sampled_from(places), st.sampled_from(HOSTILE)), min_size=1,
                    max_size=3))  # fmt: skip
    def run(edits):
        doc = json.loads(seed)
        for path, value in edits:
            try:
                doc = _replaced(doc, path, json.loads(json.dumps(value)))
            except (KeyError, IndexError, TypeError):
                continue  # an earlier edit removed this place
        checked("tokenizer", _read_and_encode, json.dumps(doc).encode())

    run()
