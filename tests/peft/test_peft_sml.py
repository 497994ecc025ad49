"""The ``finetune:`` section of a record: validation messages at their node, and the
record-driven path (build, load pre-trained weights, fine-tune, merge, plain record)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from peftutil import arr, ids_for

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog import peft
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import AdamW
from scellis.catalog.sml_registry import catalog_registry
from scellis.model import RecordModel, finetune_model, finetuned_record, load_weights
from scellis.sml import parse, validate

REG = catalog_registry()

BASE = """\
model: tests/tiny_lm@1
inputs:
  ids: { shape: [batch, 6], dtype: i32 }
blocks:
  tok: { block_id: nn/embedding, in: ids, num_embeddings: 11, embedding_dim: 8 }
  pos: { block_id: nn/learned_position, in: tok, max_len: 8, dim: 8 }
  body: { block_id: nn/transformer, in: pos, d_model: 8, num_heads: 2, num_layers: 1 }
  head: { block_id: nn/lm_head, in: body, d_model: 8, vocab_size: 11 }
determinism_tier: debug
seed: 3
"""

FINETUNE = """\
finetune:
  swap_head: { head: { vocab_size: 7 } }
  adapters:
    - { block_id: peft/lora, target_modules: [q, v], rank: 2, alpha: 4.0 }
    - { block_id: peft/dora, target_modules: "*.mlp.fc1", rank: 1 }
  freeze: ["*"]
  train: [body.ln_f.*]
"""


def _problems(text: str) -> list[str]:
    return [f"{d.line}:{d.col}: {d.message}" for d in validate(parse(text), REG)]


def test_a_finetune_section_validates():
    assert _problems(BASE + FINETUNE) == []


@pytest.mark.parametrize(
    "section, want",
    [
        ("finetune:\n  adaptors: []\n", "12:3: unknown finetune key 'adaptors'"),
        ("finetune:\n  adapters:\n    - { block_id: peft/lora, rank: 2 }\n",
         "13:7: missing required field 'target_modules' of peft/lora"),
        ("finetune:\n  adapters:\n    - { block_id: peft/lora, target_modules: [q], rank: 0 }\n",
         "13:57: rank must be >= 1, got 0"),
        ("finetune:\n  adapters:\n    - { block_id: peft/lora, target_modules: [q], rnak: 2 }\n",
         "13:51: unknown field 'rnak' of peft/lora"),
        ("finetune:\n  adapters:\n    - { block_id: nn/linear }\n",
         "13:19: 'nn/linear' is a block, not a peft"),
        ("finetune:\n  adapters:\n    - { block_id: peft/lorra, target_modules: [q] }\n",
         "13:19: unknown block_id 'peft/lorra'; did you mean 'peft/lora'?"),
        ("finetune:\n  adapters: { block_id: peft/lora }\n",
         "12:13: adapters is a list of peft entries"),
        ("finetune:\n  swap_head: { neck: { vocab_size: 3 } }\n",
         "12:16: swap_head names 'neck', which is no block"),
        ("finetune:\n  swap_head: { head: { vocab: 3 } }\n",
         "12:24: unknown field 'vocab' of nn/lm_head"),
        ("finetune:\n  freeze: [tok.*, 3]\n", "12:19: a name pattern must be a non-empty string"),
        ("finetune: [lora]\n", "11:11: finetune must be a mapping"),
    ],
)  # fmt: skip
def test_finetune_mistakes_are_located(section, want):
    got = _problems(BASE + section)
    assert any(g.startswith(want) for g in got), got


def _pretrained(record):
    """A 'pre-trained' model: the record's model after a few full training steps."""
    m = RecordModel(record)
    opt = AdamW(m, lr=0.05)
    ids = ids_for("pretrain", (3, 6))
    for _ in range(3):
        opt.zero_grad()
        CrossEntropyLoss()(m(ids), ids).backward()
        opt.step()
    return {k: arr(v).astype(np.float32) for k, v in m.state_dict().items()}, m


def test_record_path_loads_finetunes_merges_and_exports_a_plain_record():
    base = parse(BASE).data
    weights, pre = _pretrained(base)
    record = parse(BASE + FINETUNE).data
    model, plan = finetune_model(record, weights)
    assert plan.swapped == ["head"]
    assert [a for a, _ in plan.adapters] == ["peft/lora", "peft/dora"]
    adapter = {n for n in plan.trainable if ".lora_" in n or n.endswith("magnitude")}
    assert set(plan.trainable) == adapter | {"body.ln_f.weight", "body.ln_f.bias",
                                             "head.weight"}  # fmt: skip
    # the loaded pre-trained weights are in place (the swapped head is new)
    sd = model.state_dict()
    for k, v in weights.items():
        if not k.startswith("head."):
            np.testing.assert_array_equal(arr(sd[k]), v, err_msg=k)
    ids = ids_for("ft", (3, 6))
    y = ids_for("ft:y", (3, 6), vocab=7)
    opt = AdamW(model, lr=0.05)
    assert opt._groups[0].names == plan.trainable
    for _ in range(3):
        opt.zero_grad()
        CrossEntropyLoss()(model(ids), y).backward()
        opt.step()
    model.eval()
    adapted = arr(model(ids))
    assert adapted.shape == (3, 6, 7)
    peft.merge_lora(model)
    plain = finetuned_record(record)
    assert "finetune" not in plain and plain["blocks"]["head"]["vocab_size"] == 7
    again = RecordModel(plain)
    load_weights(again, model.state_dict())
    np.testing.assert_allclose(arr(again.eval()(ids)), adapted, rtol=1e-5, atol=1e-5)


def test_load_weights_refuses_what_does_not_fit():
    base = parse(BASE).data
    weights, _ = _pretrained(base)
    m = RecordModel(base)
    with pytest.raises(ScellisError, match=r"missing \['tok.weight'\]"):
        load_weights(m, {k: v for k, v in weights.items() if k != "tok.weight"})
    bad = dict(weights, **{"tok.weight": np.zeros((3, 8), np.float32).tolist()})
    with pytest.raises(ScellisError, match=r"tok.weight: weights of shape \[3, 8\]"):
        load_weights(m, bad)


def test_the_lora_example_validates_and_builds():
    path = Path(__file__).resolve().parents[2] / "examples" / "char_transformer_lora.sml"
    doc = parse(path.read_text(), str(path))
    assert validate(doc, REG) == []
    model, plan = finetune_model(doc.data, device="null")
    assert [a for a, _ in plan.adapters] == ["peft/lora"]
    assert set(plan.trainable) - {"body.ln_f.weight", "body.ln_f.bias"} == {
        f"body.blocks.{i}.attn.{p}.lora_{m}" for i in (0, 1) for p in "qv" for m in "AB"
    }
    text = peft.describe(model)
    assert text.count("peft/lora") == 4 and "lowered: op graph" in text
    # the adapted forward runs on the shape-only device the IR's tracer records on
    ids = sc.zeros((3, 32), dtype="i32", device="null")
    assert model(ids).shape == (3, 32, 88)
