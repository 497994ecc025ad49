"""Hostile tokenizer.json files: each ends in one short ScellisError line (exit 2 from
``scellis train`` of a record whose text data names the tokenizer), quickly, with
nothing outside the given folder touched; valid files still tokenize as the
``tokenizers`` library does."""

from __future__ import annotations

import json
import os
import random
import time

import pytest
from hostile import Sentinel, refuse

from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.data.tokenizer import Tokenizer
from scellis.data.tokenizer.spec import MAX_ADDED, MAX_BYTES
from scellis.data.tokenizer.uregex import category_class

tk = pytest.importorskip("tokenizers")

CORPUS = ["the quick brown fox jumps over the lazy dog", "Café naïve 日本語 😀 42",
          "def f(x):\n    return x**2\n", "it's   spaced\tout"]  # fmt: skip
RECORD = """\
model: tests/tok_lm@1
inputs:
  ids: {{ shape: [batch, 4], dtype: i32 }}
blocks:
  tok: {{ block_id: nn/embedding, in: ids, num_embeddings: {vocab}, embedding_dim: 4 }}
  head: {{ block_id: nn/lm_head, in: tok, d_model: 4, vocab_size: {vocab}, tie_to: tok }}
outputs: [head]
optimizer: {{ block_id: training/optimizer/adam, lr: 0.01 }}
loss: {{ block_id: training/loss/cross_entropy }}
epochs: 1
batch_size: 2
determinism_tier: debug
seed: 1
data: {{ source: corpus.txt, format: text, tokenizer: tokenizer.json, context: 4 }}
"""


@pytest.fixture(scope="module")
def base() -> dict:
    """A real byte-level BPE tokenizer.json (as GPT-2's), with an added token."""
    t = tk.Tokenizer(tk.models.BPE())
    t.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = tk.decoders.ByteLevel()
    trainer = tk.trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], show_progress=False,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    t.train_from_iterator(CORPUS * 3, trainer)
    return json.loads(t.to_str())


@pytest.fixture()
def folder(tmp_path, base):
    """A record, its text and a valid tokenizer.json; a sentinel folder beside them."""
    rng = random.Random(os.urandom(8))
    text = "\n".join(rng.choice(CORPUS) for _ in range(40))
    (tmp_path / "corpus.txt").write_text(text)
    (tmp_path / "lm.sml").write_text(RECORD.format(vocab=len(base["model"]["vocab"]) + 1))
    (tmp_path / "tokenizer.json").write_text(json.dumps(base))
    return tmp_path


def _train(folder):
    return ["train", folder / "lm.sml", "--store", folder / "store", "--device", "reference",
            "--max-steps", "1"]  # fmt: skip


def _edited(base, path, value):
    doc = json.loads(json.dumps(base))
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def test_a_valid_tokenizer_trains(folder, capsys):
    assert main([str(a) for a in _train(folder)]) == 0, capsys.readouterr().err


# (where in the file, hostile value, what the message names)
TYPE_SWAPS = [
    (("model", "merges"), "a b", "model.merges"),
    (("model", "merges"), [["a"]], r"model.merges\[0\]"),
    (("model", "merges"), [5], r"model.merges\[0\]"),
    (("model", "merges"), ["ab"], r"model.merges\[0\]"),
    (("model", "merges"), [["a", 3]], r"model.merges\[0\]"),
    (("model", "vocab"), [], "model.vocab"),
    (("model", "vocab"), {"a": "1"}, r"model.vocab\[a\]"),
    (("model", "vocab"), {"a": -1}, r"model.vocab\[a\]"),
    (("model", "vocab"), {"a": True}, r"model.vocab\[a\]"),
    (("model", "vocab"), {"a": 2**60}, r"model.vocab\[a\]"),
    (("model", "vocab"), {"a": 1.5}, r"model.vocab\[a\]"),
    (("model", "vocab"), {"a": 3, "b": 3}, "given to two tokens"),
    (("model", "type"), "Unigram", "model 'Unigram' is not supported"),
    (("model",), None, "model"),
    (("model", "unk_token"), 7, "model.unk_token"),
    (("model", "dropout"), "x", "model.dropout"),
    (("added_tokens",), {"id": 1}, "added_tokens"),
    (("added_tokens",), [{"content": "x"}], r"added_tokens\[0\].*'id' is missing"),
    (("added_tokens",), [{"id": 1}], r"added_tokens\[0\].*'content' is missing"),
    (("added_tokens",), [{"id": "1", "content": "x"}], r"added_tokens\[0\].id"),
    (("added_tokens",), [{"id": 1, "content": ["x"]}], r"added_tokens\[0\].content"),
    (("added_tokens",), [{"id": 1, "content": ""}], r"added_tokens\[0\].content"),
    (("added_tokens",), [{"id": 1, "content": "x", "lstrip": "yes"}], "lstrip"),
    (("added_tokens",), [7], r"added_tokens\[0\]"),
    (("pre_tokenizer",), {"type": "Nope"}, "pre_tokenizer 'Nope' is not supported"),
    (("pre_tokenizer",), "ByteLevel", "pre_tokenizer"),
    (("pre_tokenizer",), {"type": "Sequence", "pretokenizers": [1]}, r"pretokenizers\[0\]"),
    (("pre_tokenizer",), {"type": "Sequence"}, "'pretokenizers' is missing"),
    (("pre_tokenizer",), {"type": "Split", "pattern": "x"}, "pre_tokenizer.pattern"),
    (("pre_tokenizer",), {"type": "Split", "pattern": {"Regex": 5}}, "pattern.Regex"),
    (("pre_tokenizer",), {"type": "Metaspace", "replacement": "ab"}, "replacement"),
    (("pre_tokenizer",), {"type": "Split", "pattern": {"String": "a"}, "behavior": 1},
     "behavior"),
    (("normalizer",), {"type": "Replace", "pattern": {"Regex": "a"}, "content": "b"}, "regex"),
    (("normalizer",), {"type": "Replace", "pattern": {"String": "a"}}, "'content' is missing"),
    (("normalizer",), {"type": "Prepend", "prepend": None}, "normalizer.prepend"),
    (("normalizer",), {"type": "Sequence", "normalizers": {"type": "NFC"}}, "normalizers"),
    (("normalizer",), {"type": "BertNormalizer", "lowercase": "no"}, "lowercase"),
    (("decoder",), {"type": "Strip", "content": " ", "start": 10**15, "stop": 0}, "start"),
    (("decoder",), {"type": "Sequence", "decoders": [None]}, r"decoders\[0\]"),
    (("decoder",), [], "decoder"),
    (("post_processor",), {"type": "TemplateProcessing", "single": [{"SpecialToken":
     {"id": "<s>", "type_id": 0}}], "special_tokens": {}}, "not in special_tokens"),
    (("post_processor",), {"type": "TemplateProcessing", "single": [{"Bogus": 1}]}, "single"),
    (("post_processor",), {"type": "BertProcessing", "cls": ["[CLS]"], "sep": ["[SEP]", 1]},
     "cls"),
    (("post_processor",), {"type": "RobertaProcessing", "cls": ["a", -4], "sep": ["b", 1]},
     r"cls\[1\]"),
]  # fmt: skip


@pytest.mark.parametrize("path,value,match", TYPE_SWAPS, ids=range(len(TYPE_SWAPS)))
def test_wrong_shapes_name_the_field(folder, base, capsys, tmp_path_factory, path, value,
                                     match):  # fmt: skip
    sentinel = Sentinel(tmp_path_factory.mktemp("sentinel"))
    (folder / "tokenizer.json").write_text(json.dumps(_edited(base, path, value)))
    line = refuse(capsys, _train(folder), match)
    assert "tokenizer.json" in line and not sentinel.secret_leaked(line)
    sentinel.unchanged()


def _nested(depth: int, family: str, field: str) -> str:
    head = json.dumps({"type": "Sequence", field: []})[:-2]  # '{"type": ..., "FIELD": ['
    return head * depth + json.dumps({"type": family}) + "]}" * depth


@pytest.mark.parametrize("kind,family,field", [
    ("normalizer", "NFC", "normalizers"), ("pre_tokenizer", "WhitespaceSplit", "pretokenizers"),
    ("decoder", "Fuse", "decoders"), ("post_processor", "ByteLevel", "processors"),
])  # fmt: skip
def test_sequences_nested_100k_deep_are_one_line(folder, base, capsys, kind, family, field):
    doc = json.dumps({**base, kind: None})
    doc = doc.replace(f'"{kind}": null', f'"{kind}": ' + _nested(100_000, family, field))
    (folder / "tokenizer.json").write_text(doc)
    refuse(capsys, _train(folder), "nests deeper")


def test_an_oversized_file_is_refused_before_reading(folder, capsys):
    with open(folder / "tokenizer.json", "wb") as f:
        f.truncate(MAX_BYTES + 1)
    refuse(capsys, _train(folder), "cap")


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|a)*$", r"(?:a?a?)+$", r"(\w+\s?)+$",
                                     r"(.*a){20}", r"a*a*a*b", r"(a)\1", "x" * 5000,
                                     r"\p{L}" * 800, r"(?=(a+))+b", "[", r"\p{Zzz}"])  # fmt: skip
def test_split_patterns_that_backtrack_without_bound_are_refused(folder, base, capsys,
                                                                 pattern):  # fmt: skip
    category_class("L")  # the Unicode table, built once a process (~0.5 s) outside the timing
    pre = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
           "invert": False}  # fmt: skip
    (folder / "tokenizer.json").write_text(json.dumps(_edited(base, ("pre_tokenizer",), pre)))
    (folder / "corpus.txt").write_text("a" * 200_000 + "!")
    line = refuse(capsys, _train(folder), "[Rr]egex", seconds=3)
    assert len(line) < 300


def test_shipped_split_patterns_still_work(base):
    """Llama 3's and GPT-4o's patterns pass the check and split long runs quickly."""
    gpt4o = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
             r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
             r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")  # fmt: skip
    llama3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
              r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")  # fmt: skip
    text = "a" * 50_000 + " " * 50_000 + "x\n" + "\n" * 1000 + "Hello, World 12345"
    for pattern in (llama3, gpt4o):
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False,
             "trim_offsets": False}]}  # fmt: skip
        doc = _edited(base, ("pre_tokenizer",), pre)
        ours = Tokenizer(doc)
        ref = tk.Tokenizer.from_str(json.dumps(doc))
        t0 = time.perf_counter()
        ids = ours.encode(text)
        assert time.perf_counter() - t0 < 20
        assert ids == ref.encode(text).ids


def test_many_added_tokens_match_in_linear_time(base):
    n = 100_000
    rng = random.Random(os.urandom(8))
    added = [{"id": 1000 + i, "content": f"<t{i}>", "special": True} for i in range(n)]
    t0 = time.perf_counter()
    ours = Tokenizer({**base, "added_tokens": added})
    picks = [rng.randrange(n) for _ in range(2000)]
    text = "".join(f"x<t{i}> <" for i in picks) + "<" * 100_000
    ids = ours.encode(text)
    assert time.perf_counter() - t0 < 10
    assert [i - 1000 for i in ids if i >= 1000] == picks


def test_too_many_added_tokens_are_refused(base):
    added = [{"id": 1, "content": "x"}] * (MAX_ADDED + 1)
    t0 = time.perf_counter()
    with pytest.raises(ScellisError, match="added_tokens: .* cap"):
        Tokenizer({**base, "added_tokens": added})
    assert time.perf_counter() - t0 < 2


def test_added_tokens_match_as_the_library(base):
    """Longest first, leftmost, lstrip/rstrip taking the whitespace beside."""
    ref = tk.Tokenizer.from_str(json.dumps(base))
    ref.add_tokens(["ab", "abc", tk.AddedToken("<m>", lstrip=True, rstrip=True), "b c"])
    ours = Tokenizer(json.loads(ref.to_str()))
    for text in ["abcd", "xab c", "a  <m>  b", "<m><m> abc", " b c<m>", "aabcab", ""]:
        assert ours.encode(text) == ref.encode(text).ids, text


def test_refusals_never_echo_the_text(base):
    """A refusal about a long word quotes a short start of it, not the word."""
    doc = json.loads(json.dumps(base))
    doc["model"]["vocab"] = {"a": 0}
    doc["model"]["merges"] = []
    doc["pre_tokenizer"] = None
    ours = Tokenizer(doc)
    with pytest.raises(ScellisError) as e:
        ours.encode("a" * 5_000_000 + "b")
    assert len(str(e.value)) < 200


def test_normalizers_that_grow_the_text_are_refused(base):
    grow = {"type": "Replace", "pattern": {"String": "a"}, "content": "a" * 200}
    doc = {**base, "normalizer": {"type": "Sequence", "normalizers": [grow] * 10}}
    t0 = time.perf_counter()
    with pytest.raises(ScellisError, match="longer"):
        Tokenizer(doc).encode("a" * 10_000)
    assert time.perf_counter() - t0 < 2
