"""Llama-shaped QLoRA records for tests: a config as the Hugging Face codec reads it, and
the imported record with text data (written beside it), AdamW, cross-entropy and an NF4
base under LoRA on every dense block."""

from __future__ import annotations

import random

from scellis.codecs.hf import llama
from scellis.codecs.record import record_text


def llama_config(hidden: int, vocab: int, context: int, intermediate: int | None = None) -> dict:
    """One decoder layer, two query heads sharing one key/value head, untied head."""
    return {
        "model_type": "llama", "hidden_size": hidden, "num_attention_heads": 2,
        "num_key_value_heads": 1, "num_hidden_layers": 1,
        "intermediate_size": intermediate or 2 * hidden, "vocab_size": vocab,
        "max_position_embeddings": context, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "hidden_act": "silu",
    }  # fmt: skip


def qlora_record(folder, config: dict, name: str, *, rank: int, seed: int) -> str:
    """The record's text; its data is made-up words in ``folder/text.txt``."""
    context = config["max_position_embeddings"]
    rnd = random.Random(seed)
    words = ["".join(rnd.choice("abcdefghij") for _ in range(rnd.randint(2, 6))) for _ in range(40)]
    (folder / "text.txt").write_text(" ".join(rnd.choices(words, k=1500)))
    rec = llama.record(config, name, context)
    rec.update({
        "optimizer": {"block_id": "training/optimizer/adamw", "lr": 1e-2, "weight_decay": 0.0},
        "loss": {"block_id": "training/loss/cross_entropy"},
        "epochs": 1, "batch_size": 2, "precision": "f32", "seed": 3, "determinism_tier": "debug",
        "data": {"source": "text.txt", "format": "text", "tokenizer": "char", "context": context,
                 "stride": context, "val_fraction": 0.1},
        "finetune": {"adapters": [{"block_id": "peft/lora", "target_modules": "*", "rank": rank,
                                   "alpha": 2.0 * rank}], "quantize_base": "nf4"},
    })  # fmt: skip
    return record_text(rec)
