"""QLoRA benchmark: the memory plan of a ~100M-parameter decoder, and quantisation error.

Usage::

    PYTHONPATH=src python3 bench/qlora_plan.py                     # both tables
    PYTHONPATH=src python3 bench/qlora_plan.py --budget 4GiB --batch 4 --context 256

Plan: a Llama-shaped decoder (hidden 768, 12 layers, 12 heads, SwiGLU 2048, RMSNorm,
RoPE, vocabulary 8192, untied head: 97.6M parameters) made as a record with AdamW and
cross-entropy; no weight is allocated, the planner traces it on its recording device
for the WebGPU spec's limits under ``--budget``: the plan ``scellis train`` makes
(``run.planning.plan_steps``: the loop's guarded update, replayed steps where they fit,
else eager ones, an evaluation forward at the training batch beside them). Three runs
of the same record: full fine-tuning, LoRA rank 8 on every dense block (f32 base,
frozen), and the same with ``quantize_base: nf4`` (QLoRA), and with ``double_quant:
true`` (its block scales as int8 per 256). Reported per run: the verdict, whether the
steps replay, the peak and the classes at the peak; for a LoRA run that is not green,
the planner's "quantise the base (nf4)" remediation.

Error: a dense block of torch's init (768 -> 768, U(+-1/sqrt(768))) and one of N(0, 1)
weights, quantised as int8 and NF4: the weights' relative error ||W~ - W|| / ||W|| and
the forward's ||x W~^T - x W^T|| / ||x W^T|| for N(0, 1) inputs (64 rows), on the
reference device.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.base.quant import QuantSpec, dequantize, quantize  # noqa: E402
from scellis.codecs.hf import llama  # noqa: E402
from scellis.ir.limits import human, resolve  # noqa: E402
from scellis.ir.remedies import QUANTIZE_FIX  # noqa: E402
from scellis.run.planning import plan_steps  # noqa: E402

CONFIG = {
    "model_type": "llama", "hidden_size": 768, "num_attention_heads": 12,
    "num_hidden_layers": 12, "intermediate_size": 2048, "vocab_size": 8192,
    "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "hidden_act": "silu",
    "tie_word_embeddings": False,
}  # fmt: skip
LORA = {"block_id": "peft/lora", "target_modules": "*", "rank": 8, "alpha": 16.0}
DOUBLE_QUANT = {"format": "nf4", "double_quant": True}
SHOWN = ("parameters", "gradients", "optimizer_state", "activations", "working")


def decoder(batch: int, context: int) -> dict:
    record = llama.record(CONFIG, "bench/llama100m@1", context)
    return {
        **record,
        "optimizer": {"block_id": "training/optimizer/adamw", "lr": 1e-4},
        "loss": {"block_id": "training/loss/cross_entropy"},
        "epochs": 1, "batch_size": batch, "precision": "f32", "seed": 0,
    }  # fmt: skip


def plans(budget: str, batch: int, context: int) -> None:
    target = resolve("webgpu-spec", budget)
    base = decoder(batch, context)
    runs = {
        "full fine-tune": base,
        "LoRA r8, f32 base": {**base, "finetune": {"adapters": [LORA]}},
        "QLoRA r8, nf4 base": {**base, "finetune": {"adapters": [LORA], "quantize_base": "nf4"}},
        "QLoRA r8, nf4 base, double quant": {
            **base,
            "finetune": {"adapters": [LORA], "quantize_base": DOUBLE_QUANT},
        },
    }
    print(f"budget {budget}, batch {batch}, context {context}, target webgpu-spec limits\n")
    print("| run | stored elements | verdict | steps | peak | " + " | ".join(SHOWN) + " |")
    print("|---" * (5 + len(SHOWN)) + "|")
    offered, notes = None, []
    for name, record in runs.items():
        p, replayed = plan_steps(record, target, eval_batch=batch)
        cells = " | ".join(human(p.classes.get(c, 0)) for c in SHOWN)
        steps = "replayed" if replayed else "eager"
        print(f"| {name} | {p.n_params:,} | {p.verdict} | {steps} | {human(p.peak)} | {cells} |")
        notes += [f"{name}: refused: {x}" for x in p.problems]
        fix = next((r for r in p.remediations if r["fix"] == QUANTIZE_FIX), None)
        if name.startswith("LoRA") and fix:
            offered = fix
    print("\n" + "\n".join(notes) if notes else "")
    if offered:
        print(f"\nLoRA plan's remediation: {offered['fix']}: saves {human(offered['saving'])}")
        print(f"  {offered['detail']}")


def errors() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 768)).astype(np.float32)
    weights = {
        "torch init U(+-1/sqrt(768))": rng.uniform(-1, 1, (768, 768)) / np.sqrt(768),
        "N(0, 1)": rng.standard_normal((768, 768)),
    }
    print("\n| weight | format | bytes (codes + scales) / f32 | weight rel. error | "
          "forward rel. error |")  # fmt: skip
    print("|---|---|---|---|---|")
    for wname, w in weights.items():
        w = w.astype(np.float32)
        want = np.asarray((sc.tensor(x) @ sc.tensor(w).mT).tolist())
        for fmt in ("int8", "nf4"):
            spec = QuantSpec(fmt, *w.shape)
            words, scales = quantize(w.reshape(-1).tolist(), spec)
            deq = np.asarray(dequantize(words, scales, spec), np.float32).reshape(w.shape)
            codes = sc.tensor(np.frombuffer(words.tobytes(), np.uint32))
            s = sc.tensor(np.frombuffer(scales.tobytes(), np.float32))
            got = np.asarray(sc.tensor(x).qmatmul(codes, s, **spec.attrs()).tolist())
            werr = np.linalg.norm(deq - w) / np.linalg.norm(w)
            yerr = np.linalg.norm(got - want) / np.linalg.norm(want)
            ratio = spec.nbytes / (4 * w.size)
            print(f"| {wname} | {fmt} | {ratio:.4f} | {werr:.4f} | {yerr:.4f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", default="4GiB")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--skip-errors", action="store_true")
    a = ap.parse_args()
    plans(a.budget, a.batch, a.context)
    if not a.skip_errors:
        errors()


if __name__ == "__main__":
    main()
