"""The config space real Hugging Face checkpoints use: each variant either imports with
outputs equal to ``transformers``' or is refused with one message naming the field
(exit code 2 from the CLI), never imported silently wrong."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hfmodels import bert, gpt2, ids, llama, mistral, outputs, qwen2, save
from test_hf_import import TOL, ours

from scellis.cli.main import main
from scellis.codecs.convert import import_file

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# (model, sequence length): lengths past the window or the original context where those
# change the maths
SUPPORTED = {
    "llama_head_dim": lambda: (llama(head_dim=16), 20),
    "llama_kv1_gelu": lambda: (llama(kv=1, hidden_act="gelu", rms_norm_eps=1e-2), 12),
    "llama_dynamic_rope": lambda: (llama(scaling={"rope_type": "dynamic", "factor": 4.0}), 40),
    "mistral_window": lambda: (mistral(window=6), 20),
    "mistral_head_dim_window": lambda: (mistral(window=6, head_dim=12), 20),
    "qwen2_every_layer_windowed": lambda: (
        qwen2(use_sliding_window=True, sliding_window=6, max_window_layers=0),
        20,
    ),  # fmt: skip
    "gpt2_reorder_and_upcast": lambda: (gpt2(reorder_and_upcast_attn=True), 12),
    "gpt2_relu_inner": lambda: (gpt2(activation_function="relu", n_inner=20), 12),
    "bert_decoder": lambda: (bert(cls="BertLMHeadModel", is_decoder=True), 12),
}


@pytest.mark.parametrize("case", sorted(SUPPORTED))
def test_supported_variants_equal_transformers(tmp_path, case):
    model, T = SUPPORTED[case]()
    res = import_file(save(model, tmp_path / case), store=tmp_path / "s")
    if "window" in case:
        assert res.record["blocks"]["body"]["window"] == 6
    x = ids((2, T))
    x[x == 1] = 2
    np.testing.assert_allclose(ours(res.record, res.tensors, x), outputs(model, x), **TOL)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_sharded_folders_widen_exactly(tmp_path, dtype):
    model = mistral(window=6)
    folder = save(model, tmp_path / dtype, getattr(torch, dtype), max_shard_size="10KB")
    assert (folder / "model.safetensors.index.json").exists()
    res = import_file(folder, store=tmp_path / "s")
    x = ids((2, 12))
    np.testing.assert_allclose(ours(res.record, res.tensors, x), outputs(model, x), **TOL)


def _refused(capsys, folder, *words):
    """The CLI refuses ``folder`` with exit code 2 and one message holding ``words``."""
    rc = main(["import", str(folder), "--store", str(folder.parent / "s")])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and err.count("error:") == 1, err
    for w in words:
        assert w in err, (w, err)


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    return save(llama(), tmp_path_factory.mktemp("llama") / "base")


def _edited(llama_folder, tmp_path, **changes):
    """A copy of the Llama folder whose config.json has ``changes`` (None: deleted)."""
    folder = tmp_path / "m"
    shutil.copytree(llama_folder, folder)
    cfg = json.loads((folder / "config.json").read_text())
    for k, v in changes.items():
        cfg.pop(k) if v is None else cfg.update({k: v})
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}
LONGROPE = {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
            "original_max_position_embeddings": 16}  # fmt: skip
CONFIG_REFUSALS = {
    "attention_bias_alone": ({"attention_bias": True}, ["attention_bias=True", "mlp_bias=False"]),
    "mlp_bias_alone": ({"mlp_bias": True}, ["mlp_bias=True"]),
    "yarn": ({"rope_scaling": YARN, "rope_parameters": None}, ["rope_type 'yarn'"]),
    "longrope": ({"rope_scaling": LONGROPE, "rope_parameters": None}, ["rope_type 'longrope'"]),
    "model_type_missing": ({"model_type": None}, ["no 'model_type'"]),
    "model_type_unknown": ({"model_type": "qwen3"}, ["model_type 'qwen3'", "llama"]),
    "hidden_size_missing": ({"hidden_size": None}, ["'hidden_size'"]),
    "hidden_size_text": ({"hidden_size": "32"}, ["hidden_size is '32'"]),
    "layers_negative": ({"num_hidden_layers": -1}, ["num_hidden_layers is -1"]),
    "activation_unknown": ({"hidden_act": "mish"}, ["hidden_act 'mish'"]),
    "vocab_mismatch": (
        {"vocab_size": 120},
        ["'model.embed_tokens.weight' is [101, 32]", "[120, 32]"],
    ),  # fmt: skip
    "kv_heads_mismatch": ({"num_key_value_heads": 4}, ["k_proj.weight' is [16, 32]"]),
    "fewer_layers": ({"num_hidden_layers": 1}, ["no place for 9 tensor(s)", "layers.1."]),
}


@pytest.mark.parametrize("case", sorted(CONFIG_REFUSALS))
def test_config_variants_are_refused_by_name(llama_folder, tmp_path, capsys, case):
    changes, words = CONFIG_REFUSALS[case]
    _refused(capsys, _edited(llama_folder, tmp_path, **changes), *words)


def _corrupt_header(folder):
    p = folder / "model.safetensors"
    p.write_bytes(p.read_bytes()[:8] + b"x" * 12 + p.read_bytes()[20:])


def _truncate(folder):
    p = folder / "model.safetensors"
    p.write_bytes(p.read_bytes()[:-100])


FILE_REFUSALS = {
    "config_not_json": (lambda f: (f / "config.json").write_text("{bad"), ["not valid JSON"]),
    "corrupt_header": (_corrupt_header, ["model.safetensors", "header"]),
    "truncated": (_truncate, ["model.safetensors", "past the"]),
    "no_weights": (lambda f: (f / "model.safetensors").unlink(), ["no *.safetensors"]),
}


@pytest.mark.parametrize("case", sorted(FILE_REFUSALS))
def test_damaged_folders_are_refused(llama_folder, tmp_path, capsys, case):
    damage, words = FILE_REFUSALS[case]
    folder = _edited(llama_folder, tmp_path)
    damage(folder)
    _refused(capsys, folder, *words)


def test_a_missing_shard_is_named(tmp_path, capsys):
    folder = save(llama(), tmp_path / "m", max_shard_size="10KB")
    shard = sorted(folder.glob("model-*.safetensors"))[1]
    shard.unlink()
    _refused(capsys, folder, shard.name, "missing")


@pytest.mark.parametrize(
    "case, make, words",
    [
        ("partial_window", lambda: qwen2(use_sliding_window=True, sliding_window=6,
                                         max_window_layers=1), ["sliding_window (6)"]),
        ("gpt2_unscaled", lambda: gpt2(scale_attn_weights=False), ["scale_attn_weights"]),
        ("gpt2_layer_scaled", lambda: gpt2(scale_attn_by_inverse_layer_idx=True),
         ["scale_attn_by_inverse_layer_idx"]),
        ("gpt2_quick_gelu", lambda: gpt2(activation_function="quick_gelu"),
         ["activation_function 'quick_gelu'"]),
        ("bert_relative", lambda: bert(position_embedding_type="relative_key"),
         ["position_embedding_type 'relative_key'"]),
        ("bert_classifier", lambda: bert(cls="BertForSequenceClassification"),
         ["BertForSequenceClassification", "classifier.weight"]),
    ],
)  # fmt: skip
def test_unsupported_model_variants_are_refused_by_name(tmp_path, capsys, case, make, words):
    _refused(capsys, save(make(), tmp_path / case), *words)


def test_gpt2_sizes_that_do_not_fit_the_weights_are_named(tmp_path, capsys):
    folder = save(gpt2(), tmp_path / "g")
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "n_embd": 64}))
    _refused(capsys, folder, "attn.c_attn.weight", "config.json")
