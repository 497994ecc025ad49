"""The tab's fine-tune choice as a record edit: the section it writes is what the engine
applies (adapters on every dense block, the frozen base quantised as said), the
projection reads it back, the plan counts the codes, and "every weight" gives back the
text as it was; a bad choice is one clear message."""

from __future__ import annotations

import pytest

from scellis.base.errors import ScellisError
from scellis.catalog.peft import adapters_of
from scellis.model import finetune_model
from scellis.run.prepare import check_record
from scellis.webapp import model_api, run_api

# a comment and a trailing section of the user's own, which the edit must keep
RECORD = """# my decoder
model: t/lm@1
inputs:
  ids: {shape: [batch, 8], dtype: i32}
blocks:
  tok: {block_id: nn/embedding, in: ids, num_embeddings: 20, embedding_dim: 16}
  body: {block_id: nn/transformer, in: tok, d_model: 16, num_heads: 2, num_layers: 1,
         kind: decoder}
  head: {block_id: nn/lm_head, in: body, d_model: 16, vocab_size: 20}
outputs: [head]
optimizer: {block_id: training/optimizer/adamw, lr: 0.001}
loss: {block_id: training/loss/cross_entropy}
determinism_tier: debug
seed: 3  # kept
"""


def _edit(text: str, method: str, rank: int = 4) -> dict:
    return model_api.edit(text, {"kind": "finetune", "method": method, "rank": rank})


@pytest.mark.parametrize("method, fmt", [("lora", None), ("qlora", "nf4"), ("qlora-int8", "int8")])
def test_the_choice_is_the_section_the_engine_applies(method, fmt):
    out = _edit(RECORD, method, rank=3)
    assert out["ok"], out["diagnostics"]
    assert out["text"].startswith(RECORD)  # the user's text kept, the section after it
    assert out["finetune"] == {"method": method, "rank": 3}
    record = check_record(out["text"])
    model, plan = finetune_model(record, device="reference")
    adapted = adapters_of(model)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert adapted and trainable == set(plan.trainable)
    assert all(".lora_" in n for n in trainable), trainable
    assert bool(plan.quantized) == (fmt is not None)
    quant = run_api.plan(out["text"], "reference")["quantized"]
    assert (quant or {}).get("format") == fmt
    if fmt:
        assert quant["weights"] == len(plan.quantized)


def test_switching_rewrites_the_section_and_every_weight_removes_it():
    q = _edit(RECORD, "qlora", rank=8)["text"]
    lora = _edit(q, "lora", rank=2)
    assert lora["text"].count("finetune:") == 1 and "quantize_base" not in lora["text"]
    assert lora["finetune"] == {"method": "lora", "rank": 2}
    full = _edit(lora["text"], "full")
    assert full["text"] == RECORD and full["finetune"]["method"] == "full"


def test_a_section_the_choice_cannot_say_reads_custom():
    text = (
        RECORD + "finetune: {adapters: [{block_id: peft/lora, target_modules: [q]}], train: [x]}\n"
    )
    assert model_api.project(text)["finetune"]["method"] == "custom"


@pytest.mark.parametrize(
    "edit, says",
    [
        ({"method": "qlora8"}, "fine-tune method 'qlora8': one of full, lora, qlora"),
        ({"method": "lora", "rank": 0}, "LoRA rank must be a whole number from 1 to 256"),
        ({"method": "lora", "rank": 2.5}, "LoRA rank must be a whole number"),
    ],
)
def test_a_bad_choice_is_one_message_and_no_change(edit, says):
    with pytest.raises(ScellisError, match=says):
        model_api.edit(RECORD, {"kind": "finetune", **edit})
