"""Small random-weight Hugging Face models saved as folders, for the import/export tests.

Weights are redrawn N(0, 0.3^2) (norm scales around 1) so logits are far from zero and
a wrong transpose or head split shows; every model is tiny (width 32, two layers).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB, WIDTH = 101, 32


def _redraw(model, seed: int):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("norm.weight", "LayerNorm.weight", "ln_1.weight", "ln_2.weight",
                              "ln_f.weight", "layernorm.weight")):  # fmt: skip
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return model.eval()


def gpt2(tied=True, vocab=VOCAB, **kw):
    cfg = transformers.GPT2Config(n_layer=2, n_embd=WIDTH, n_head=4, vocab_size=vocab,
                                  n_positions=24, tie_word_embeddings=tied, bos_token_id=0,
                                  eos_token_id=0, **kw)  # fmt: skip
    return _redraw(transformers.GPT2LMHeadModel(cfg), 1)


def llama(tied=False, kv=2, scaling=None, **kw):
    cfg = transformers.LlamaConfig(hidden_size=WIDTH, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=kv,
                                   vocab_size=VOCAB, max_position_embeddings=64,
                                   rope_theta=500.0, rope_scaling=scaling,
                                   tie_word_embeddings=tied, **kw)  # fmt: skip
    return _redraw(transformers.LlamaForCausalLM(cfg), 2)


def qwen2(**kw):
    cfg = transformers.Qwen2Config(hidden_size=WIDTH, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=1,
                                   vocab_size=VOCAB, max_position_embeddings=64,
                                   tie_word_embeddings=True, **kw)  # fmt: skip
    return _redraw(transformers.Qwen2ForCausalLM(cfg), 3)


def bert(mlm=False, cls=None, **kw):
    """BertModel, BertForMaskedLM with ``mlm``, or the class named ``cls``."""
    cfg = transformers.BertConfig(hidden_size=WIDTH, intermediate_size=48, num_hidden_layers=2,
                                  num_attention_heads=4, vocab_size=VOCAB,
                                  max_position_embeddings=24, **kw)  # fmt: skip
    cls = getattr(transformers, cls or ("BertForMaskedLM" if mlm else "BertModel"))
    return _redraw(cls(cfg), 4)


def ids(shape=(2, 9), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, VOCAB, shape)


def outputs(model, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        o = model(torch.tensor(x))
    return (o.logits if hasattr(o, "logits") else o.last_hidden_state).numpy()


def roberta(mlm=False):
    cfg = transformers.RobertaConfig(hidden_size=WIDTH, intermediate_size=48, num_hidden_layers=2,
                                     num_attention_heads=4, vocab_size=VOCAB,
                                     max_position_embeddings=26, type_vocab_size=1)  # fmt: skip
    cls = transformers.RobertaForMaskedLM if mlm else transformers.RobertaModel
    return _redraw(cls(cfg), 5)


def distilbert(mlm=False):
    cfg = transformers.DistilBertConfig(dim=WIDTH, hidden_dim=48, n_layers=2, n_heads=4,
                                        vocab_size=VOCAB, max_position_embeddings=24)  # fmt: skip
    cls = transformers.DistilBertForMaskedLM if mlm else transformers.DistilBertModel
    return _redraw(cls(cfg), 6)


def mistral(window=None, **kw):
    cfg = transformers.MistralConfig(hidden_size=WIDTH, intermediate_size=48, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2,
                                     vocab_size=VOCAB, max_position_embeddings=64,
                                     sliding_window=window, **kw)  # fmt: skip
    return _redraw(transformers.MistralForCausalLM(cfg), 7)


def save(model, folder, dtype=None, **kw):
    """``model`` saved to ``folder`` (as ``dtype`` when given: its weights are first
    rounded to that dtype in place, so the f32 model is the reference); the folder."""
    if dtype is not None:
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(dtype).float())
        copy.deepcopy(model).to(dtype).save_pretrained(folder, **kw)  # RoPE tables stay f32
    else:
        model.save_pretrained(folder, **kw)
    return folder
