"""``scellis import DIR`` of Hugging Face model folders: GPT-2, Llama, Qwen2 and BERT
configs become records whose outputs equal ``transformers``' on random token ids."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hfmodels import bert, distilbert, gpt2, ids, llama, outputs, qwen2, roberta

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.codecs import find
from scellis.codecs.convert import header_weights, import_file
from scellis.codecs.pretrained import pretrained_model
from scellis.sml import parse

TOL = {"rtol": 1e-5, "atol": 3e-5}  # measured: at most 7e-6 on logits up to ~7

# long, short and in-between wavelengths for a head size of 8 and rope_theta 500
LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 32}  # fmt: skip
CASES = {
    "gpt2": lambda: gpt2(),
    "gpt2_untied_gelu": lambda: gpt2(tied=False, activation_function="gelu", n_inner=40),
    "llama_gqa_linear_rope": lambda: llama(scaling={"type": "linear", "factor": 2.0}),
    "llama3_rope": lambda: llama(scaling=LLAMA3_ROPE),
    "llama_tied_mha": lambda: llama(tied=True, kv=4),
    "qwen2": qwen2,
    "bert": lambda: bert(),
    "bert_mlm": lambda: bert(mlm=True),
    "roberta": lambda: roberta(),
    "roberta_mlm": lambda: roberta(mlm=True),
    "distilbert": lambda: distilbert(),
    "distilbert_mlm": lambda: distilbert(mlm=True),
}


def ours(record, tensors, x, device="reference"):
    m = pretrained_model(record, tensors, device=device).eval()
    return np.asarray(m(sc.tensor(x.tolist(), dtype="i32", device=device)).tolist())


@pytest.mark.parametrize("case", sorted(CASES))
def test_imported_outputs_equal_transformers(tmp_path, case):
    model = CASES[case]()
    model.save_pretrained(tmp_path / case)
    assert find(tmp_path / case) == "codec/hf"
    res = import_file(tmp_path / case, store=tmp_path / "store", to=tmp_path / "m.sml")
    x = ids()
    x[x == 1] = 2  # no padding token (RoBERTa numbers the positions of real tokens only)
    want = outputs(model, x)
    got = ours(res.record, res.tensors, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, **TOL)
    # the record file alone (its header names the stored weights) gives the same model
    text = (tmp_path / "m.sml").read_text()
    again = header_weights(text, tmp_path / "store")
    np.testing.assert_array_equal(ours(parse(text).data, again, x), got)


def test_sharded_folder_and_token_types(tmp_path):
    model = bert()
    model.save_pretrained(tmp_path / "b", max_shard_size="20KB")
    assert (tmp_path / "b" / "model.safetensors.index.json").exists()
    res = import_file(tmp_path / "b", store=tmp_path / "store")
    rec = res.record
    rec["inputs"]["segments"] = {"shape": ["batch", 9], "dtype": "i32"}
    rec["blocks"]["types"]["in"] = ["pos", "segments"]
    x, t = ids(), np.random.default_rng(1).integers(0, 2, (2, 9))
    m = pretrained_model(rec, res.tensors, device="reference").eval()
    got = m(sc.tensor(x.tolist(), dtype="i32"), sc.tensor(t.tolist(), dtype="i32"))
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        want = model(torch.tensor(x), token_type_ids=torch.tensor(t)).last_hidden_state
    np.testing.assert_allclose(np.asarray(got.tolist()), want.numpy(), **TOL)


def test_cli_import_writes_a_valid_record(tmp_path, capsys):
    gpt2().save_pretrained(tmp_path / "g")
    rec = tmp_path / "g.sml"
    rc = main(["import", str(tmp_path / "g"), "--to", str(rec), "--store",
               str(tmp_path / "s"), "--json"])  # fmt: skip
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["codec"] == "codec/hf" and summary["blocks"] == ["tok", "pos", "body", "head"]
    assert main(["validate", str(rec)]) == 0
    assert "tie_to: tok" in rec.read_text()


def test_unsupported_architectures_are_one_clear_error(tmp_path, capsys):
    folder = tmp_path / "t5"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "t5", "d_model": 8}))
    with pytest.raises(ScellisError, match="model_type 't5' is not supported; supported: bert"):
        import_file(folder, store=tmp_path / "s")
    assert main(["import", str(folder), "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "'t5'" in err and "gpt2" in err and "llama" in err


def test_unsupported_rope_and_stray_tensors_are_refused(tmp_path):
    m = llama(scaling={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32})
    m.save_pretrained(tmp_path / "yarn")
    with pytest.raises(ScellisError, match="rope_type 'yarn'"):
        import_file(tmp_path / "yarn", store=tmp_path / "s")
    folder = tmp_path / "extra"
    gpt2().save_pretrained(folder)
    st = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    tensors = st.load_file(folder / "model.safetensors")
    tensors["transformer.h.0.attn.extra.weight"] = torch.zeros(2)
    st.save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ScellisError, match="no place for 1 tensor"):
        import_file(folder, store=tmp_path / "s")


def test_bf16_weights_widen_exactly(tmp_path):
    torch = pytest.importorskip("torch")
    model = llama()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.bfloat16().float())  # f32 holding bf16 values (RoPE tables stay f32)
    copy.deepcopy(model).to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    res = import_file(tmp_path / "bf16", store=tmp_path / "s")
    assert {t.dtype for t in res.tensors.values()} == {"BF16"}
    x = ids()
    want = outputs(model, x)
    np.testing.assert_allclose(ours(res.record, res.tensors, x), want, **TOL)


def test_mistral_window_and_the_tokenizer_hint(tmp_path):
    transformers = pytest.importorskip("transformers")
    cfg = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=101, max_position_embeddings=64)  # fmt: skip
    model = transformers.MistralForCausalLM(transformers.MistralConfig(**cfg, sliding_window=64))
    model.eval().save_pretrained(tmp_path / "m")
    (tmp_path / "m" / "tokenizer.json").write_text("{}")
    res = import_file(tmp_path / "m", store=tmp_path / "s", to=tmp_path / "m.sml")
    assert "tokenizer: " + str(tmp_path / "m" / "tokenizer.json") in res.text
    x = ids()
    np.testing.assert_allclose(ours(res.record, res.tensors, x), outputs(model, x), **TOL)
    narrow = transformers.MistralForCausalLM(transformers.MistralConfig(**cfg, sliding_window=8))
    narrow.eval().save_pretrained(tmp_path / "n")
    res = import_file(tmp_path / "n", store=tmp_path / "s")
    assert res.record["blocks"]["body"]["window"] == 8
    x = ids((2, 20))  # past the window
    np.testing.assert_allclose(ours(res.record, res.tensors, x), outputs(narrow, x), **TOL)
