"""``tokenizer.json`` tokenizers in pure Python: ids and decoded text equal the
``tokenizers`` library's, for byte-level BPE (GPT-2 style) and SentencePiece-style BPE
(Llama style: ``▁`` for spaces, byte fallback) trained here on a varied corpus."""

from __future__ import annotations

import json

import pytest

tk = pytest.importorskip("tokenizers")

from scellis.base.errors import ScellisError  # noqa: E402
from scellis.data.tokenizer import Tokenizer, load  # noqa: E402
from scellis.data.tokenizer.pretokenize import gpt2_split  # noqa: E402
from scellis.data.tokenizer.pretokenize import make as make_pretokenizer  # noqa: E402
from scellis.data.tokenizer.uregex import compile_rust  # noqa: E402

CORPUS = [
    "Hello, world! It's a test; they'll say we've done it. I'm sure you'd agree.",
    "Café naïve résumé façade Ünïcödé — ñandú, œuvre, Ægir and Łódź.",
    "日本語のテキストと中文文本，还有한국어 문장도 있습니다。",
    "Emoji: 😀🎉👍🏽 and family 👨‍👩‍👧 with flags 🇫🇷🇯🇵!",
    "Numbers 12345 and 3.14159, 2024-06-01, ½ ¾ and ٣٤٥ digits.",
    "Whitespace   runs\tand\ttabs\n\nnew lines   \n  trailing   ",
    "def f(x):\n    return x**2  # code with    indentation\n",
    "UPPER lower MiXeD 'quoted' \"double\" (parens) [brackets] {braces} <angle>",
    "  leading spaces and a final space ",
    "don't DON'T it's IT'S 's 't 're 've 'm 'll 'd '",
]
SAMPLES = CORPUS + [
    "A sentence the tokenizer never saw: zebra quokka xylophone.",
    "Mixed: naïve 日本 😀 42\t\t end",
    "\n\n\n",
    "   ",
    "",
    "a",
    "\u00a0non-breaking\u2003em space\u3000ideographic",
    "Ĳ ǅ ﬁ ᾏ combining e\u0301 and \U0001d400 math",
    "control\x00\x07 chars\ufffd soft\u00adhyphen zero\u200bwidth \x85 next line",
    "I can't, won't; do not say it's 'done' ... or  isn't it ?! a - b",
    "<|endoftext|>special in the middle<|endoftext|>",
    "text first<|endoftext|> then more <|endoftext|><|endoftext|>x",
    "the quick brown fox, wörld of <pad> pads  <pad>x and quick  brown",
]


def _train(model, pre, decoder, normalizer=None, specials=(), **trainer):
    t = tk.Tokenizer(model)
    if normalizer is not None:
        t.normalizer = normalizer
    if pre is not None:
        t.pre_tokenizer = pre
    t.decoder = decoder
    t.train_from_iterator(CORPUS * 3, tk.trainers.BpeTrainer(special_tokens=list(specials),
                                                            **trainer))  # fmt: skip
    return t


def _byte_level(prefix: bool):
    return _train(
        tk.models.BPE(),
        tk.pre_tokenizers.ByteLevel(add_prefix_space=prefix),
        tk.decoders.ByteLevel(),
        specials=["<|endoftext|>"],
        vocab_size=600,
        initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )


def _with_bytes(t) -> tk.Tokenizer:
    """The tokenizer with the 256 ``<0xNN>`` tokens added to its model's vocabulary."""
    spec = json.loads(t.to_str())
    vocab = spec["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    return tk.Tokenizer.from_str(json.dumps(spec))


def _llama_normalizer():
    """As Hugging Face's Llama tokenizer.json: Prepend + Replace normalizers, no pre-tokenizer."""
    n = tk.normalizers.Sequence([tk.normalizers.Prepend("▁"), tk.normalizers.Replace(" ", "▁")])
    d = tk.decoders.Sequence([tk.decoders.Replace("▁", " "), tk.decoders.ByteFallback(),
                              tk.decoders.Fuse(), tk.decoders.Strip(" ", 1, 0)])  # fmt: skip
    t = _train(tk.models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True), None, d,
               normalizer=n, specials=["<unk>", "<s>", "</s>"], vocab_size=400,
               limit_alphabet=70, show_progress=False)  # fmt: skip
    t = _with_bytes(t)
    t.post_processor = tk.processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", t.token_to_id("<s>"))]
    )
    return t


def _metaspace(scheme="always"):
    """SentencePiece style through the Metaspace pre-tokenizer and decoder."""
    d = tk.decoders.Sequence(
        [tk.decoders.ByteFallback(), tk.decoders.Metaspace(prepend_scheme=scheme)]
    )
    pre = tk.pre_tokenizers.Metaspace(prepend_scheme=scheme)
    t = _train(tk.models.BPE(unk_token="<unk>", byte_fallback=True), pre,
               d, specials=["<unk>", "<s>", "</s>", "<|endoftext|>"], vocab_size=400,
               limit_alphabet=70, show_progress=False)  # fmt: skip
    return _with_bytes(t)


LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def _split_regex():
    """As Llama-3 and Qwen2 files: a Split regex, then ByteLevel without its own regex."""
    pre = tk.pre_tokenizers.Sequence([
        tk.pre_tokenizers.Split(tk.Regex(LLAMA3), behavior="isolated", invert=False),
        tk.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    t = _train(tk.models.BPE(ignore_merges=True), pre, tk.decoders.ByteLevel(),
               specials=["<|begin_of_text|>", "<|endoftext|>"], vocab_size=600,
               initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
               show_progress=False)  # fmt: skip
    t.post_processor = tk.processors.TemplateProcessing(
        single="<|begin_of_text|> $A",
        special_tokens=[("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))],
    )
    return t


def _wordpiece(lowercase: bool):
    """BERT's: BertNormalizer, BertPreTokenizer, WordPiece with ##, [CLS] $A [SEP]."""
    t = tk.Tokenizer(tk.models.WordPiece(unk_token="[UNK]"))
    t.normalizer = tk.normalizers.BertNormalizer(lowercase=lowercase)
    t.pre_tokenizer = tk.pre_tokenizers.BertPreTokenizer()
    t.decoder = tk.decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = tk.trainers.WordPieceTrainer(
        vocab_size=500, special_tokens=specials, limit_alphabet=90, show_progress=False
    )
    t.train_from_iterator(CORPUS * 3, trainer)
    t.post_processor = tk.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[("[CLS]", t.token_to_id("[CLS]")), ("[SEP]", t.token_to_id("[SEP]"))],
    )
    return t


KINDS = {
    "wordpiece_uncased": lambda: _wordpiece(True),
    "wordpiece_cased": lambda: _wordpiece(False),
    "split_regex_ignore_merges": _split_regex,
    "byte_level": lambda: _byte_level(False),
    "byte_level_prefix_space": lambda: _byte_level(True),
    "llama_normalizers": _llama_normalizer,
    "metaspace_byte_fallback": _metaspace,
    "metaspace_prepend_first": lambda: _metaspace("first"),
    "metaspace_prepend_never": lambda: _metaspace("never"),
}


@pytest.fixture(scope="module", params=sorted(KINDS))
def pair(request, tmp_path_factory):
    ref = KINDS[request.param]()
    ref.add_tokens(["wörld", "quick brown", tk.AddedToken("<pad>", lstrip=True, rstrip=True)])
    path = tmp_path_factory.mktemp(request.param) / "tokenizer.json"
    ref.save(str(path))
    return ref, load(path)


@pytest.mark.parametrize("special", [True, False])
def test_ids_equal_the_tokenizers_library(pair, special):
    ref, ours = pair
    for text in SAMPLES:
        want = ref.encode(text, add_special_tokens=special).ids
        assert ours.encode(text, add_special_tokens=special) == want, text


def test_a_long_text_equals_the_library(pair):
    """A real text file (a SentencePiece-style file without a pre-tokenizer makes the
    whole text one word: merging stays O(n log n))."""
    from scellis.data.record import BUNDLED

    text = (BUNDLED / "python_help_topics.txt").read_text()[:40000]
    ref, ours = pair
    assert ours.encode(text) == ref.encode(text).ids
    assert ours.decode(ref.encode(text).ids) == ref.decode(ref.encode(text).ids)


def test_decode_equals_the_tokenizers_library(pair):
    ref, ours = pair
    for text in SAMPLES:
        ids = ref.encode(text).ids
        for skip in (True, False):
            want = ref.decode(ids, skip_special_tokens=skip)
            assert ours.decode(ids, skip_special_tokens=skip) == want, (text, skip)
    assert ours.vocab_size == ref.get_vocab_size()


def test_byte_fallback_is_exercised():
    ref = _metaspace()
    ids = ref.encode("ゑ 🦀").ids  # in no training text
    assert any(ref.id_to_token(i).startswith("<0x") for i in ids)


def test_gpt2_split_equals_the_regex():
    regex = pytest.importorskip("regex")
    pat = regex.compile(
        r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    )
    for text in SAMPLES + ["a  b", " \nx", "x \n", "  ", "'", "'ll'", "a'sb", "1 2  3   "]:
        assert gpt2_split(text) == pat.findall(text), text


@pytest.mark.parametrize("pattern", [GPT2, LLAMA3], ids=["gpt2", "llama3"])
def test_translated_regexes_equal_the_regex_module(pattern):
    regex = pytest.importorskip("regex")
    ours, theirs = compile_rust(pattern), regex.compile(pattern)
    for text in SAMPLES + ["a  b", " \nx", "x \r\n\n y", "12345678", "\x1c\x1d x"]:
        assert ours.findall(text) == theirs.findall(text), text


@pytest.mark.parametrize(
    "behavior", ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]
)
def test_split_behaviors_equal_the_library(behavior):
    ref = tk.pre_tokenizers.Split(tk.Regex(r"[,;]| +"), behavior=behavior)
    spec = json.loads(tk.pre_tokenizers.Sequence([ref]).__getstate__())["pretokenizers"][0]
    ours = make_pretokenizer(spec)
    for text in ["a, b;; c", ",,x", "x  ", " ,a b ;"]:
        want = [p for p, _ in ref.pre_tokenize_str(text)]
        assert ours(text, True) == want, text


def test_unsupported_files_are_refused(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"model": {"type": "Unigram", "vocab": []}}))
    with pytest.raises(ScellisError, match="model 'Unigram' is not supported"):
        Tokenizer.from_file(p)
    p.write_text("{")
    with pytest.raises(ScellisError, match="not valid JSON"):
        Tokenizer.from_file(p)


RECORD = """\
model: tests/bpe_lm@1
inputs:
  ids: {{ shape: [batch, 8], dtype: i32 }}
blocks:
  tok: {{ block_id: nn/embedding, in: ids, num_embeddings: {vocab}, embedding_dim: 8 }}
  pos: {{ block_id: nn/learned_position, in: tok, max_len: 8, dim: 8 }}
  body: {{ block_id: nn/transformer, in: pos, d_model: 8, num_heads: 2, num_layers: 1 }}
  head: {{ block_id: nn/lm_head, in: body, d_model: 8, vocab_size: {vocab}, tie_to: tok }}
outputs: [head]
optimizer: {{ block_id: training/optimizer/adam, lr: 0.01 }}
loss: {{ block_id: training/loss/cross_entropy }}
epochs: 1
batch_size: 4
determinism_tier: debug
seed: 1
data: {{ source: corpus.txt, format: text, tokenizer: tok/tokenizer.json, context: 8 }}
"""


def test_a_record_tokenizes_its_text_with_a_tokenizer_json(tmp_path, capsys):
    from scellis.cli.main import main
    from scellis.data import load_data
    from scellis.sml import parse

    ref = _byte_level(False)
    (tmp_path / "tok").mkdir()
    ref.save(str(tmp_path / "tok" / "tokenizer.json"))
    text = "\n".join(CORPUS * 4)
    (tmp_path / "corpus.txt").write_text(text)
    rec = tmp_path / "lm.sml"
    rec.write_text(RECORD.format(vocab=ref.get_vocab_size()))
    assert main(["validate", str(rec)]) == 0
    ds = load_data(parse(rec.read_text()).data["data"], tmp_path)
    ids = ref.encode(text, add_special_tokens=False).ids
    assert ds.x_train[0] == ids[:8] and ds.y_train[0] == ids[1:9]
    assert len(ds.vocab) == ref.get_vocab_size() and ds.vocab.decode(ids) == text
    char = load_data({"source": "corpus.txt", "format": "text", "context": 8}, tmp_path)
    assert char.digest != ds.digest
    rc = main(["train", str(rec), "--store", str(tmp_path / "s"), "--device", "reference",
               "--max-steps", "2", "--json"])  # fmt: skip
    assert rc == 0, capsys.readouterr()
    capsys.readouterr()
    # the run continues text through its tokenizer: streamed pieces add up to the JSON's text
    prompt = "Café naïve 日本"
    args = ["generate", "last", "--prompt", prompt, "--max-new", "12", "--store",
            str(tmp_path / "s"), "--device", "reference", "--temperature", "1.5"]  # fmt: skip
    assert main(args) == 0
    streamed = capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    head = ref.encode(prompt, add_special_tokens=False).ids
    whole = ref.decode(head + row["ids"])
    assert whole.startswith(prompt) and row["generated"] == whole[len(prompt) :]
    assert streamed.rstrip("\n") == row["generated"].rstrip("\n") or "\ufffd" in whole
