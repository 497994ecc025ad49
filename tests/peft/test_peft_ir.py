"""PEFT through the compiler (ir layer): LoRA lowers into the op graph and the compiled
forward; ``scellis compile`` declares each adapter's path; the memory plan counts
gradients and optimizer state for the trainable parameters only."""

from __future__ import annotations

import numpy as np
import pytest
from peftutil import arr, ids_for, rng_for

import scellis as sc
from scellis.base.errors import ScellisError
from scellis.catalog.peft.select import put_param
from scellis.cli.main import main
from scellis.devices.webgpu.backend import size_class
from scellis.ir.compiled import compile_forward
from scellis.ir.limits import resolve
from scellis.ir.plan import make_plan
from scellis.model import finetune_model
from scellis.sml import parse

RECORD = """\
model: tests/tiny_lm@1
inputs:
  ids: { shape: [batch, 6], dtype: i32 }
blocks:
  tok: { block_id: nn/embedding, in: ids, num_embeddings: 11, embedding_dim: 8 }
  pos: { block_id: nn/learned_position, in: tok, max_len: 8, dim: 8 }
  body: { block_id: nn/transformer, in: pos, d_model: 8, num_heads: 2, num_layers: 2 }
  head: { block_id: nn/lm_head, in: body, d_model: 8, vocab_size: 11 }
outputs: [head]
optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss: { block_id: training/loss/cross_entropy }
batch_size: 4
determinism_tier: debug
seed: 1
"""
LORA = """\
finetune:
  adapters:
    - { block_id: peft/lora, target_modules: [q, v], rank: 2 }
    - { block_id: peft/dora, target_modules: [fc1], rank: 2 }
"""
PREFIX = """\
    - { block_id: peft/prefix, target_modules: [body.blocks.1.attn], num_virtual_tokens: 2 }
"""
TARGET = resolve("webgpu-spec")


def test_lora_and_dora_lower_into_the_compiled_forward():
    record = parse(RECORD + LORA).data
    model, plan = finetune_model(record)
    for name in plan.trainable:  # B = 0 would hide the adapter path: random values
        owner, _, attr = name.rpartition(".")
        mod = dict(model.named_modules())[owner]
        v = rng_for(name).standard_normal(getattr(mod, attr).shape).astype(np.float32) * 0.3
        put_param(mod, attr, sc.tensor(v + (1.0 if attr == "magnitude" else 0.0)))
    model.eval()
    ids = ids_for("ir", (4, 6))
    compiled = compile_forward(record, TARGET, batch=4)
    lora_params = [b.name for b in compiled.graph.buffers.values() if b.role == "param"]
    assert "body.blocks.0.attn.q.lora_A" in lora_params
    assert "body.blocks.1.mlp.fc1.magnitude" in lora_params
    np.testing.assert_allclose(arr(compiled.run(model, ids)), arr(model(ids)), rtol=1e-5,
                               atol=1e-5)  # fmt: skip


def test_compile_output_declares_graph_and_eager_adapters(tmp_path, capsys):
    path = tmp_path / "ft.sml"
    path.write_text(RECORD + LORA + PREFIX)
    assert main(["compile", str(path), "--emit", "ops"]) == 0
    out = capsys.readouterr().out
    head = [ln for ln in out.splitlines() if ln.startswith("# ") and "  peft/" in ln]
    assert len(head) == 2 * 2 + 2 + 1
    assert all("lowered: op graph" in ln for ln in head if "peft/lora" in ln or "peft/dora" in ln)
    assert [ln.split()[1] for ln in head if "eager path" in ln] == ["body.blocks.1.attn"]
    # the op graph shows the eager step for shapes and memory; it is not compiled
    assert "param body.blocks.1.attn.prefix_key" in out
    with pytest.raises(ScellisError, match=r"adapters \(body.blocks.1.attn\) run on the eager"):
        compile_forward(parse(RECORD + LORA + PREFIX).data, TARGET, batch=4)


def test_memory_plan_counts_state_for_trainable_parameters_only():
    full = make_plan(parse(RECORD).data, TARGET, remediate=False)
    record = parse(RECORD + LORA).data
    lora = make_plan(record, TARGET, remediate=False)
    model, plan = finetune_model(record, device="null")
    trained = sum(p.numel for p in model.parameters() if p.requires_grad)
    everything = sum(p.numel for p in model.parameters())
    # Adam: two moments, each one flat buffer over the trainable parameters
    assert lora.classes["optimizer_state"] == 2 * size_class(4 * trained)
    assert full.classes["optimizer_state"] == 2 * size_class(4 * (everything - trained))
    # the most gradient bytes live at once: the adapters' are several times fewer (the
    # breakdown at the peak instant moves with what the WebGPU pool keeps free)
    assert lora.class_peaks["gradients"] < full.class_peaks["gradients"] / 3
