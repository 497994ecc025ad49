"""``scellis export RECORD --to hf DIR``: a folder ``transformers`` loads with
``AutoModelForCausalLM.from_pretrained`` and whose logits equal the record's model
(imported models round-trip; a record of Scellis' own; LoRA merged into the weights)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hfmodels import VOCAB, bert, gpt2, ids, llama, outputs, qwen2, roberta
from test_hf_import import TOL, ours

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog.peft.lora import lora_modules
from scellis.cli.main import main
from scellis.codecs import make
from scellis.codecs.convert import export_file, header_weights, import_file
from scellis.codecs.pretrained import pretrained_model
from scellis.codecs.weights import state_of
from scellis.run.reference import open_run
from scellis.sml import parse

transformers = pytest.importorskip("transformers")

# long, short and in-between wavelengths for a head size of 8 and rope_theta 500
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 32}  # fmt: skip
CASES = {
    "gpt2": lambda: gpt2(),
    "gpt2_untied": lambda: gpt2(tied=False, activation_function="gelu"),
    "llama_gqa_linear_rope": lambda: llama(scaling={"type": "linear", "factor": 2.0}),
    "llama3_rope": lambda: llama(scaling=LLAMA3_ROPE),
    "llama_tied": lambda: llama(tied=True),
    "llama_head_dim": lambda: llama(head_dim=16),
    "qwen2": qwen2,
}


def _load(folder):
    return transformers.AutoModelForCausalLM.from_pretrained(folder).eval()


@pytest.mark.parametrize("case", sorted(CASES))
def test_imported_models_round_trip(tmp_path, case, capsys):
    model = CASES[case]()
    model.save_pretrained(tmp_path / "in")
    store, rec = str(tmp_path / "store"), tmp_path / "m.sml"
    import_file(tmp_path / "in", store=store, to=rec)
    out = tmp_path / "out"
    rc = main(["export", str(rec), "--to", "hf", "--out", str(out), "--store", store, "--json"])
    assert rc == 0, capsys.readouterr()
    assert json.loads(capsys.readouterr().out)["codec"] == "codec/hf"
    back = _load(out)
    assert type(back).__name__ == type(model).__name__
    x = ids()
    np.testing.assert_allclose(outputs(back, x), outputs(model, x), **TOL)


CHAR = f"""\
model: tests/char@1
inputs:
  ids: {{ shape: [batch, 12], dtype: i32 }}
blocks:
  tok: {{ block_id: nn/embedding, in: ids, num_embeddings: {VOCAB}, embedding_dim: 16 }}
  pos: {{ block_id: nn/learned_position, in: tok, max_len: 12, dim: 16, std: 0.5 }}
  body: {{ block_id: nn/transformer, in: pos, d_model: 16, num_heads: 2, num_layers: 2 }}
  head: {{ block_id: nn/lm_head, in: body, d_model: 16, vocab_size: {VOCAB} }}
outputs: [head]
determinism_tier: debug
seed: 3
"""


def test_a_scellis_record_exports_as_gpt2(tmp_path):
    rec = tmp_path / "char.sml"
    rec.write_text(CHAR)
    export_file(rec, "hf", out=tmp_path / "out", store=tmp_path / "s")
    back = _load(tmp_path / "out")
    assert back.config.model_type == "gpt2" and not back.config.tie_word_embeddings
    x = ids((2, 12))
    want = ours(parse(CHAR).data, None, x)
    np.testing.assert_allclose(outputs(back, x), want, **TOL)


def test_lora_is_merged_into_the_exported_weights(tmp_path):
    llama().save_pretrained(tmp_path / "in")
    store = tmp_path / "store"
    res = import_file(tmp_path / "in", store=store, to=tmp_path / "m.sml")
    section = (
        "finetune:\n  adapters:\n"
        "    - { block_id: peft/lora, target_modules: [q, v, down], rank: 2 }\n"
    )
    text = (tmp_path / "m.sml").read_text() + section
    (tmp_path / "ft.sml").write_text(text)
    adapted = pretrained_model(parse(text).data, header_weights(text, store)).eval()
    g = np.random.default_rng(5)
    for m in lora_modules(adapted).values():
        shape = tuple(m.lora_B.shape)
        m.lora_B = sc.tensor(g.normal(0, 0.3, shape).astype(np.float32).tolist()).requires_grad_()
    weights = tmp_path / "trained.safetensors"
    make("codec/safetensors").write(weights, state_of(adapted), None)
    export_file(tmp_path / "ft.sml", "hf", out=tmp_path / "out", store=store,
                weights=str(weights))  # fmt: skip
    x = ids()
    want = np.asarray(adapted(sc.tensor(x.tolist(), dtype="i32")).tolist())
    base = ours(res.record, res.tensors, x)
    assert np.abs(want - base).max() > 1e-2  # the adapters change the model
    np.testing.assert_allclose(outputs(_load(tmp_path / "out"), x), want, **TOL)


@pytest.mark.parametrize("kind", ["bert", "bert_mlm", "roberta_mlm"])
def test_bert_style_records_export_as_bert(tmp_path, kind):
    mlm = kind.endswith("mlm")
    model = roberta(mlm=True) if kind == "roberta_mlm" else bert(mlm=mlm)
    model.save_pretrained(tmp_path / "in")
    import_file(tmp_path / "in", store=tmp_path / "s", to=tmp_path / "b.sml")
    export_file(tmp_path / "b.sml", "hf", out=tmp_path / "out", store=tmp_path / "s")
    auto = transformers.AutoModelForMaskedLM if mlm else transformers.AutoModel
    back = auto.from_pretrained(tmp_path / "out").eval()
    assert type(back).__name__ == ("BertForMaskedLM" if mlm else "BertModel")
    x = ids()
    x[x == 1] = 2  # RoBERTa's padding id: its positions are numbered apart
    np.testing.assert_allclose(outputs(back, x), outputs(model, x), **TOL)


def test_records_with_no_hf_layout_are_refused(tmp_path):
    rec = tmp_path / "d.sml"
    drop = "  drop: { block_id: nn/dropout, in: body, p: 0.1 }\n  head:"
    rec.write_text(CHAR.replace("  head:", drop).replace("in: body, d_model", "in: drop, d_model"))
    with pytest.raises(ScellisError, match="no Hugging Face layout fits the chain"):
        export_file(rec, "hf", out=tmp_path / "o", store=tmp_path / "s")
    rec = tmp_path / "c.sml"
    rec.write_text(CHAR.replace("num_layers: 2", "num_layers: 2, norm_first: false"))
    with pytest.raises(ScellisError, match="GPT-2 export cannot hold post-norm"):
        export_file(rec, "hf", out=tmp_path / "o2", store=tmp_path / "s")


TRAINING = """\
epochs: 1
batch_size: 2
data: { source: corpus.txt, format: text, tokenizer: hf, context: 24, val_fraction: 0.3 }
finetune:
  adapters:
    - { block_id: peft/lora, target_modules: [q, v, fc1], rank: 2 }
"""


def test_hf_folder_fine_tuned_from_the_cli_exports_from_its_run(tmp_path, capsys):
    """A folder with tokenizer.json: import, LoRA on text its tokenizer windows, export
    the run (last checkpoint, merged) as a folder transformers loads."""
    tk = pytest.importorskip("tokenizers")
    corpus = [
        "The quick brown fox jumps over the lazy dog. " * 3,
        "Pack my box with five dozen liquor jugs! 12345 ",
        "Sphinx of black quartz, judge my vow; naïve café. ",
    ] * 8
    tok = tk.Tokenizer(tk.models.BPE())
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    tok.train_from_iterator(corpus, tk.trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=tk.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))  # fmt: skip
    folder = tmp_path / "hf"
    gpt2(vocab=tok.get_vocab_size()).save_pretrained(folder)
    tok.save(str(folder / "tokenizer.json"))
    (tmp_path / "corpus.txt").write_text("".join(corpus))
    store, rec = str(tmp_path / "s"), tmp_path / "m.sml"
    assert main(["import", str(folder), "--to", str(rec), "--store", store]) == 0
    rec.write_text(rec.read_text() + TRAINING)
    rc = main(["train", str(rec), "--store", store, "--device", "reference", "--max-steps", "2",
               "--lr", "0.01", "--json"])  # fmt: skip
    assert rc == 0, capsys.readouterr()
    capsys.readouterr()
    out = tmp_path / "out"
    assert main(["export", "last", "--to", "hf", "--out", str(out), "--store", store]) == 0
    adapted = open_run(store, "last").model("reference")  # LoRA still apart
    x = ids((2, 24), seed=3) % tok.get_vocab_size()
    want = np.asarray(adapted(sc.tensor(x.tolist(), dtype="i32")).tolist())
    np.testing.assert_allclose(outputs(_load(out), x), want, **TOL)


def test_torch_module_export_refuses_the_variants_it_does_not_model(tmp_path):
    rec = tmp_path / "c.sml"
    rec.write_text(CHAR.replace("num_layers: 2", "num_layers: 2, norm: rms, mlp: gated"))
    with pytest.raises(ScellisError, match="norm, mlp have no torch export"):
        export_file(rec, "torch", out=tmp_path / "t", store=tmp_path / "s")
