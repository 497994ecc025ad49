"""A step whose first run fills a cache (a rotary decoder's position tables) differs
from the steps after it, yet the run replays them: the plan must count the replayed
steps' residency all the same. The oracle is the run itself, on lavapipe: it replays,
and the plan says so in its replay bytes."""

from __future__ import annotations

import asyncio
import random

import pytest

from scellis.codecs.hf import llama
from scellis.codecs.record import record_text
from scellis.ir.limits import resolve
from scellis.ir.plan import make_plan, steps_repeat
from scellis.ir.trace import trace
from scellis.run.options import RunOptions
from scellis.run.prepare import check_record
from scellis.run.session import start_run

CONFIG = {
    "model_type": "llama", "hidden_size": 32, "num_attention_heads": 2,
    "num_key_value_heads": 1, "num_hidden_layers": 1, "intermediate_size": 64,
    "vocab_size": 64, "max_position_embeddings": 16, "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False, "hidden_act": "silu",
}  # fmt: skip


def _record(folder) -> str:
    rnd = random.Random(5)
    (folder / "text.txt").write_text("".join(rnd.choice("abcdefgh ") for _ in range(3000)))
    rec = llama.record(CONFIG, "test/rope@1", 16)
    rec.update({
        "optimizer": {"block_id": "training/optimizer/adamw", "lr": 1e-2, "weight_decay": 0.0},
        "loss": {"block_id": "training/loss/cross_entropy"},
        "epochs": 1, "batch_size": 2, "precision": "f32", "seed": 3, "determinism_tier": "debug",
        "data": {"source": "text.txt", "format": "text", "tokenizer": "char", "context": 16,
                 "stride": 16, "val_fraction": 0.1},
        "finetune": {"adapters": [{"block_id": "peft/lora", "target_modules": "*", "rank": 2}],
                     "quantize_base": "nf4"},
    })  # fmt: skip
    return record_text(rec)


@pytest.mark.webgpu
def test_a_step_that_fills_a_cache_first_is_planned_as_replayed(gpu, tmp_path):
    text = _record(tmp_path)
    rec = check_record(text, "rope.sml", base_dir=tmp_path)
    tr = trace(rec, device="webgpu")
    assert not steps_repeat(tr)  # the first step makes the position tables
    assert steps_repeat(trace(rec, device="webgpu", steps=3), skip=1)
    target = resolve("webgpu-spec", "4GiB")
    plan = make_plan(rec, target, replay=True)
    assert plan.replay_bytes > 0
    assert make_plan(rec, target, replay=False).replay_bytes == 0

    ends = []

    async def drive(s):
        async for ev in s.events():
            if ev.kind == "end":
                ends.append(ev.to_dict())

    options = RunOptions(max_steps=6, log_every=1, validate=False)
    asyncio.run(drive(start_run(text.encode(), "rope.sml", options=options, device=gpu,
                                base_dir=tmp_path)))  # fmt: skip
    assert ends[0]["replay"]["replayed_steps"] > 0
