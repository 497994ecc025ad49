"""QLoRA showcase: a ~100M-parameter Hugging Face decoder, imported, planned and fine-tuned
three ways (full, LoRA, QLoRA), beside PyTorch on the same machine.

Usage (one shot, about 4 minutes on a GPU machine)::

    PYTHONPATH=src python3 bench/qlora_showcase.py --out OUT
    PYTHONPATH=src python3 bench/qlora_showcase.py --tiny --device webgpu --out /tmp/q  # smoke

What runs, each stage through the path a user takes:

1. Model: ``transformers.LlamaForCausalLM`` with random weights (``torch.manual_seed``),
   hidden 768, 12 layers, 12 heads, SwiGLU 2048, vocabulary 8192, untied head
   (97.6M parameters; bench/qlora_plan.py's CONFIG), ``save_pretrained`` (safetensors).
   ``--tiny``: hidden 64, 2 layers, 4 heads, SwiGLU 128, vocabulary 256, context 32.
2. Import: ``scellis import DIR --to base.sml --store STORE`` as a subprocess; its wall
   time (process start included) is reported.
3. Records: the imported record with the input length set to ``--context``, a data
   section (a generated text of made-up words, ``tokenizer: char``: ~30 distinct
   characters, ids far inside the vocabulary), ``batch_size``, ``precision: f32``, and
   for the three runs: nothing more (full fine-tuning, AdamW), ``finetune:`` LoRA rank 8
   alpha 16 on every dense block (``target_modules: "*"``; the base frozen, f32), and the
   same with ``quantize_base: nf4`` (QLoRA).
4. Plan: ``scellis plan FILE --json`` as parallel subprocesses, four per record: on the
   WebGPU spec's limits with ``--budget`` (default 4GiB: what any WebGPU device, a
   browser tab included, must offer) and on ``--device`` with its own limits and
   detected budget, each for replayed steps (the default) and eager ones
   (``--no-replay``). Reported: verdict and peak bytes. Check: QLoRA's peak < LoRA's <
   full's on the spec's limits, for either step mode.
5. Training: ``run.session.start_run``, what ``scellis train`` calls, on ``--device``
   with the import's store (so the imported weights load), ``log_every`` 1, no
   validation, ``--warmup`` + ``--steps`` steps, once per ``--modes`` entry: ``replay``
   (the default: the first three steps run eagerly, compile the shaders and record the
   schedule, later ones replay it) and ``eager`` (``--no-replay``). The loop reads the
   loss back at every log point, so a step's time (from one log event to the next,
   stamped as it arrives) includes its GPU work. ms/step: the median over the timed
   steps. First and last loss: steps 1 and last. Device memory: the backend's peak of
   live tensor storage during the run, model building included (``memory()``; pool size
   classes; the pool is emptied and the peak reset before each run). The run then ends
   as a user's does (its final checkpoint is written after the timing).
6. Peer: the same saved model in PyTorch (``--peer-device``, default CUDA when present),
   f32 with TF32 off, AdamW with the same lr, full fine-tuning and LoRA (``peft``, rank 8,
   alpha 16, on the dense layers Scellis adapts, its A matrices copied from Scellis'
   initial ones; B starts at zero in both), the same batches in the same order. A step
   is forward, cross-entropy, backward and the update, closed by ``loss.item()``; median
   ms/step over the timed steps; ``torch.cuda.max_memory_allocated``. The losses must
   agree with Scellis' (printed). No QLoRA peer: its 4-bit layers need bitsandbytes,
   which the peer machine does not have.

Output: a markdown table printed and written to OUT/qlora_showcase.md, everything measured
in OUT/qlora_showcase.json. A stage that fails is reported in its row and the notes; the
script goes on with the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.catalog.peft.lora import lora_modules  # noqa: E402
from scellis.catalog.peft.quant import dequantized_weight  # noqa: E402
from scellis.data.record import load_data  # noqa: E402
from scellis.devices.base import get_device  # noqa: E402
from scellis.ir.limits import human  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.run.options import RunOptions  # noqa: E402
from scellis.run.session import start_run  # noqa: E402

CONFIG = {
    "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 12,
    "intermediate_size": 2048, "vocab_size": 8192, "max_position_embeddings": 2048,
}  # fmt: skip
TINY = {
    "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
    "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 64,
}  # fmt: skip
COMMON = {"rms_norm_eps": 1e-5, "hidden_act": "silu", "tie_word_embeddings": False}
RANK, ALPHA = 8, 16.0
LORA = f'{{block_id: peft/lora, target_modules: "*", rank: {RANK}, alpha: {ALPHA}}}'
FINETUNE = {
    "full": "",
    "lora": f"finetune:\n  adapters:\n    - {LORA}\n",
    "qlora": f"finetune:\n  adapters:\n    - {LORA}\n  quantize_base: nf4\n",
}
TITLES = {"full": "full fine-tune (f32, AdamW)", "lora": "LoRA r8, f32 base",
          "qlora": "QLoRA r8, nf4 base"}  # fmt: skip
# the dense layers of a Llama block, as Scellis' import and transformers name them
# (Scellis' "*": every dense block; peft is given the same ones)
DENSE = {"attn.q": "self_attn.q_proj", "attn.k": "self_attn.k_proj",
         "attn.v": "self_attn.v_proj", "attn.o": "self_attn.o_proj",
         "mlp.gate": "mlp.gate_proj", "mlp.up": "mlp.up_proj",
         "mlp.down": "mlp.down_proj"}  # fmt: skip
TORCH_DENSE = [name.split(".")[-1] for name in DENSE.values()]


# -- 1. the model --


def build_hf(folder: Path, shape: dict, seed: int, dtype: str = "float32") -> int:
    """A seeded random Llama of ``shape`` saved as a Hugging Face folder in ``dtype``
    (float32 | bfloat16: made in that dtype, so a 1B model never exists in f32 on the
    host); its parameter count."""
    import torch
    import transformers

    cfg = transformers.LlamaConfig(**shape, **COMMON)
    torch.manual_seed(seed)
    before = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        model = transformers.LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(before)
    model.save_pretrained(folder, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


# -- 2. import --


def cli(*args: str) -> tuple[int, str, str, float]:
    """``scellis ARGS`` in a fresh process: (exit status, stdout, stderr, wall seconds)."""
    path = os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "scellis.cli.main", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0


def import_model(folder: Path, work: Path) -> dict:
    to, store = work / "base.sml", work / "store"
    rc, out, err, wall = cli("import", str(folder), "--to", str(to), "--store", str(store),
                             "--json")  # fmt: skip
    if rc != 0:
        raise RuntimeError(f"scellis import failed (exit {rc}): {err.strip()[-2000:]}")
    return {"wall_s": round(wall, 2), "record": str(to), "store": str(store),
            **json.loads(out.strip().splitlines()[-1])}  # fmt: skip


# -- 3. the records --


def make_text(path: Path, chars: int, seed: int) -> None:
    """Made-up words with Zipf-like frequencies over a-z: a text a model can learn from."""
    import random

    rnd = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rnd.choice(letters) for _ in range(rnd.randint(2, 8))) for _ in range(300)]
    weights = [1.0 / (i + 1) for i in range(len(words))]
    out, n = [], 0
    while n < chars:
        line = " ".join(rnd.choices(words, weights, k=rnd.randint(5, 14))) + ".\n"
        out.append(line)
        n += len(line)
    path.write_text("".join(out))


def write_records(base: Path, work: Path, a, names=tuple(FINETUNE)) -> dict[str, Path]:
    """The runs' records (``names`` of FINETUNE) beside the imported one (same folder:
    the data path)."""
    text = base.read_text()
    text, n = re.subn(r"(shape: \[batch, )\d+(\])", rf"\g<1>{a.context}\g<2>", text, count=1)
    if n != 1:
        raise RuntimeError("the imported record has no [batch, N] input to set the context of")
    # enough training windows that the timed steps never reach an epoch's short last batch
    windows = (a.warmup + a.steps + 4) * a.batch * 2
    make_text(work / "text.txt", int(windows * a.context / 0.9) + 4 * a.context, a.seed)
    pipeline = (
        f"epochs: 1\nbatch_size: {a.batch}\nprecision: f32\n"
        f"data: {{source: text.txt, format: text, tokenizer: char, context: {a.context}, "
        f"stride: {a.context}, val_fraction: 0.1}}\n"
    )
    out = {}
    for name in names:
        path = work / f"{name}.sml"
        path.write_text(text.rstrip("\n") + "\n\n" + pipeline + FINETUNE[name])
        out[name] = path
    return out


# -- 4. plans --


# per step mode: on the WebGPU spec's limits under --budget, and on --device's own
PLANS = {f"plan_{where}_{mode}": (where, mode) for where in ("spec", "device")
         for mode in ("eager", "replay")}  # fmt: skip


def plan(path: Path, device: str, budget: str | None, replay: bool, validate: bool = True) -> dict:
    args = ["plan", str(path), "--device", device, "--json"]
    args += (["--budget", budget] if budget else []) + ([] if replay else ["--no-replay"])
    args += [] if validate else ["--no-validate"]
    rc, out, err, wall = cli(*args)
    if rc not in (0, 2) or not out.strip():
        raise RuntimeError(f"scellis plan failed (exit {rc}): {err.strip()[-2000:]}")
    p = json.loads(out.strip().splitlines()[-1])
    keep = ("verdict", "peak", "step_peak", "eval_peak", "replay_bytes", "parameters_count",
            "budget", "problems", "classes")  # fmt: skip
    return {**{k: p[k] for k in keep}, "wall_s": round(wall, 2)}


def all_plans(res: dict, records: dict, a) -> None:
    """Every record's plans, as parallel ``scellis plan`` processes."""
    jobs = {}
    with ThreadPoolExecutor(max_workers=len(records) * len(PLANS)) as pool:
        for name, path in records.items():
            for col, (where, mode) in PLANS.items():
                own = (a.device, a.device_budget)
                device, budget = ("webgpu-spec", a.budget) if where == "spec" else own
                jobs[name, col] = pool.submit(plan, path, device, budget, mode == "replay")
    for (name, col), job in jobs.items():
        row = res["runs"].setdefault(name, {})
        row[col] = stage(res, f"{name} plan {col}", job.result)
        for problem in (row[col] or {}).get("problems", [])[:1]:
            res["notes"].append(f"{name} plan {col}: {problem}")


# -- 5. training on Scellis --


def reset_memory(backend) -> int:
    """Empty the pool, reset the peak; the bytes still live (the baseline)."""
    gc.collect()
    if hasattr(backend, "empty_pool"):
        backend.empty_pool()
    if hasattr(backend, "reset_peak"):
        backend.reset_peak()
    return backend.memory()["live_bytes"] if hasattr(backend, "memory") else 0


def train(path: Path, store: str, mode: str, a, backend=None) -> dict:
    """One run of the record at ``path``; ``backend``: an opened device to run on (e.g.
    one with lowered limits), else ``--device``."""
    backend = backend or get_device(a.device)
    baseline = reset_memory(backend)
    options = RunOptions(max_steps=a.warmup + a.steps, log_every=1, validate=False, lr=a.lr,
                         replay=mode == "replay", checkpoint_minutes=1e6)  # fmt: skip
    t0 = time.perf_counter()
    s = start_run(path.read_bytes(), path.name, options=options, device=backend,
                  base_dir=path.parent, store=store, budget=a.device_budget,
                  argv=["bench/qlora_showcase.py"])  # fmt: skip
    ready = time.perf_counter() - t0
    model = s.prep.ts.model
    trainable = sum(p.numel for p in model.parameters() if p.requires_grad)
    adapters = lora_modules(model)
    # the adapters' first A (B starts at zero): the torch peer starts from the same
    initial_a = {path: m.lora_A.tolist() for path, m in adapters.items()}
    stamps, losses, notes, end, plan_ev = [], [], [], None, None
    clock = time.perf_counter()
    stamps_at_start = clock

    async def drive():
        nonlocal end, plan_ev
        async for ev in s.events():
            now = time.perf_counter()
            if ev.kind == "log":
                stamps.append(now)
                losses.append(ev.loss)
            elif ev.kind == "plan":
                plan_ev = ev
            elif ev.kind in ("info", "warning"):
                notes.append(ev.get("message") or str(ev.to_dict()))
            elif ev.kind == "end":
                end = ev

    asyncio.run(drive())
    base = decoded_base(model) if getattr(a, "collect_base", False) else None
    mem = backend.memory() if hasattr(backend, "memory") else {}
    per_step = [b - c for b, c in zip(stamps[1:], stamps[:-1], strict=False)]
    timed = per_step[a.warmup - 1 :] if a.warmup >= 1 else per_step
    out = {
        "trainable": trainable,
        "adapted": list(adapters),
        "initial_a": initial_a,
        "setup_s": round(ready, 2),
        "first_step_ms": round((stamps[0] - stamps_at_start) * 1e3, 1) if stamps else None,
        "ms_per_step": round(statistics.median(timed) * 1e3, 2) if timed else None,
        "ms_steps": [round(x * 1e3, 2) for x in timed],
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "losses": losses,
        "steps": len(losses),
        "device_peak": mem.get("peak_bytes", 0) - baseline if mem else None,
        "baseline_live": baseline,
        "train_plan": {"verdict": plan_ev["verdict"], "peak": plan_ev["peak"]} if plan_ev else None,
        "replay": end["replay"] if end else None,
        "run_wall_s": round(time.perf_counter() - clock, 2),
        "notes": notes,
    }
    if base is not None:
        out["base_values"] = base
    return out


def decoded_base(model) -> dict:
    """{transformers module path: f32 array} of every weight the run holds as codes: the
    values the quantised base stands for, decoded on the device one weight at a time (a
    peer given them computes what the run computes, up to float rounding)."""
    out = {}
    for path, m in model.named_modules():
        if getattr(m, "quant", None) is None:
            continue
        name = hf_path(path)
        if name is None:
            raise RuntimeError(f"no transformers name for the quantised block {path!r}")
        out[name] = dequantized_weight(m).numpy()
    return out


# -- 6. the PyTorch peer --


def torch_batches(record: Path, a) -> list:
    """The run's own training windows, in order, as [batch, context] id batches."""
    import torch

    rec = load_record(str(record))
    ds = load_data(rec["data"], base_dir=record.parent)
    n = a.warmup + a.steps
    order = ds.train_order(rec.get("seed", 0), 0)  # the loop's shuffled first epoch
    rows = [(ds.x_train[i], ds.y_train[i]) for i in order[: n * a.batch]]
    out = []
    for b in range(n):
        chunk = rows[b * a.batch : (b + 1) * a.batch]
        out.append((torch.tensor([x for x, _ in chunk]), torch.tensor([y for _, y in chunk])))
    return out


def torch_run(folder: Path, batches: list, kind: str, a, base_values: dict | None = None) -> dict:
    """``base_values``: {module path: weight} put over the folder's (a quantised base's
    decoded values), before the adapters are added."""
    import torch
    import transformers

    dev = torch.device(a.peer_device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).to(dev)
    for name, w in (base_values or {}).items():
        mod = model.get_submodule(name if name == "lm_head" else f"model.{name}")
        with torch.no_grad():
            mod.weight.copy_(torch.from_numpy(w))
    if kind == "lora":
        import peft

        cfg = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
                              target_modules=TORCH_DENSE + a.torch_head)  # fmt: skip
        model = peft.get_peft_model(model, cfg)
        share_lora_init(model, a.initial_a)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)
    if dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

    def step(x, y) -> float:
        logits = model(input_ids=x.to(dev)).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.to(dev).reshape(-1))  # fmt: skip
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()  # the readback closes the step: its GPU work is in its time

    losses, times = [], []
    for x, y in batches:
        t0 = time.perf_counter()
        losses.append(step(x, y))
        times.append(time.perf_counter() - t0)
    timed = times[a.warmup :]
    out = {
        "trainable": sum(p.numel() for p in params),
        "ms_per_step": round(statistics.median(timed) * 1e3, 2),
        "ms_steps": [round(t * 1e3, 2) for t in timed],
        "first_loss": losses[0],
        "last_loss": losses[-1],
        "losses": losses,
        "steps": len(losses),
        "device_peak": torch.cuda.max_memory_allocated() if dev.type == "cuda" else None,
    }
    return out


def hf_path(path: str) -> str | None:
    """transformers' module path of a Scellis dense block (``body.blocks.3.attn.q``)."""
    m = re.fullmatch(r"body\.blocks\.(\d+)\.(.+)", path)
    if m and m.group(2) in DENSE:
        return f"layers.{m.group(1)}.{DENSE[m.group(2)]}"
    return "lm_head" if path == "head" else None


def share_lora_init(model, initial_a: dict) -> None:
    """Start peft's A matrices from Scellis' (both draw U(+-1/sqrt(in)); B is zero in
    both), so the two LoRA runs follow the same path and their losses can be compared."""
    import torch

    want = {hf_path(p): a for p, a in initial_a.items()}
    done = 0
    for name, mod in model.named_modules():
        a = next((v for k, v in want.items() if k and name.endswith("." + k)), None)
        if a is not None and hasattr(mod, "lora_A"):
            with torch.no_grad():
                mod.lora_A["default"].weight.copy_(torch.tensor(a))
            done += 1
    if done != len(want):
        raise RuntimeError(f"peft has {done} of Scellis' {len(want)} adapters")


def free_torch(dev: str) -> None:
    """Give the last run's memory back before the next one measures its own."""
    import torch

    gc.collect()
    if dev == "cuda":
        torch.cuda.empty_cache()


def peer_device(asked: str) -> tuple[str | None, str]:
    """The torch device to compare on, or None and why not."""
    if asked == "none":
        return None, "no PyTorch peer (--peer-device none)"
    try:
        import torch
    except ImportError:
        return None, "no PyTorch peer: torch is not importable here"
    if asked == "auto":
        if torch.cuda.is_available():
            return "cuda", ""
        return None, "no PyTorch peer: torch has no CUDA device here (--peer-device cpu forces one)"
    return asked, ""


# -- 7. the report --


def cell(v, fmt=str) -> str:
    return "-" if v is None else fmt(v)


def loss(v) -> str:
    return cell(v, lambda x: f"{x:.4f}")


def table(res: dict) -> str:
    own, budget = res["args"]["device"], res["args"]["budget"]
    lines = [
        f"| run | steps | trainable | plan on {budget} (webgpu-spec) | plan on {own} "
        "| device memory | ms/step | first loss | last loss |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["runs"].items():
        for mode in res["args"]["modes"]:
            t = r.get(f"train_{mode}") or {}
            spec, mine = r.get(f"plan_spec_{mode}"), r.get(f"plan_device_{mode}")
            lines.append(
                f"| scellis {own}: {TITLES[name]} | {mode} "
                f"| {cell(t.get('trainable'), '{:,}'.format)} | {_plan_cell(spec)} "
                f"| {_plan_cell(mine)} | {cell(t.get('device_peak'), human)} "
                f"| {cell(t.get('ms_per_step'))} | {loss(t.get('first_loss'))} "
                f"| {loss(t.get('last_loss'))} |"
            )
    for name, t in res["peer"].items():
        lines.append(
            f"| torch {res['peer_device']}: {TITLES[name]} | eager | {t['trainable']:,} | - | - "
            f"| {cell(t.get('device_peak'), human)} | {t['ms_per_step']} "
            f"| {loss(t['first_loss'])} | {loss(t['last_loss'])} |"
        )
    return "\n".join(lines)


def _plan_cell(p: dict | None) -> str:
    return f"{p['verdict']}, {human(p['peak'])}" if p else "-"


def plausibility(res: dict) -> str:
    """QLoRA's plan peak < LoRA's < full's, on the spec's limits, per step mode."""
    said = []
    for mode in ("eager", "replay"):
        peaks = [(res["runs"][n].get(f"plan_spec_{mode}") or {}).get("peak") for n in FINETUNE]
        if None in peaks:
            said.append(f"{mode}: not checked (a plan is missing)")
            continue
        full, lora, qlora = peaks
        ok = qlora < lora < full
        res[f"plausible_{mode}"] = ok
        said.append(f"{mode} steps: {'plausible' if ok else 'IMPLAUSIBLE'}: plan peaks QLoRA "
                    f"{human(qlora)} < LoRA {human(lora)} < full {human(full)}")  # fmt: skip
    return "; ".join(said)


def agreement(res: dict) -> str:
    """Scellis against torch, same weights, data order and (LoRA) initial A: the losses
    should agree to f32 rounding, step after step."""
    said = []
    for name, t in res["peer"].items():
        row = res["runs"].get(name) or {}
        ours = next((row[k] for k in ("train_eager", "train_replay") if row.get(k)), None)
        if not ours or ours.get("last_loss") is None:
            continue
        diff = max(abs(ours[k] - t[k]) for k in ("first_loss", "last_loss"))
        said.append(f"{name}: |scellis - torch| first/last loss <= {diff:.2e}"
                    + (" (agree)" if diff < 1e-2 else " (DIFFER)"))  # fmt: skip
    return "; ".join(said) or "-"


def report(res: dict, out: Path) -> str:
    r = res
    imp = r.get("import") or {}
    lines = [
        f"# QLoRA showcase ({'tiny' if r['args']['tiny'] else '~100M'} Llama decoder)",
        "",
        f"model: {cell(r.get('hf_parameters'), '{:,}'.format)} parameters (transformers, "
        f"random, seed {r['args']['seed']}); batch {r['args']['batch']}, "
        f"context {r['args']['context']}, "
        f"lr {r['args']['lr']}; {r['args']['warmup']} warm-up + {r['args']['steps']} timed "
        f"steps; device {r['args']['device']} ({r.get('adapter', '-')})",
        f"import: `scellis import` {imp.get('wall_s', '-')} s, {imp.get('tensors', '-')} tensors",
        "",
        table(r),
        "",
        f"check: {r.get('check', '-')}",
        f"torch peer: {agreement(r)}",
    ]
    lines += [f"- {n}" for n in r["notes"]]
    text = "\n".join(lines) + "\n"
    (out / "qlora_showcase.md").write_text(text)
    (out / "qlora_showcase.json").write_text(json.dumps(r, indent=1, default=str))
    return text


# -- driving it --


def stage(res: dict, where: str, fn, *args):
    """Run one stage; a failure becomes a note, and the script goes on."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - one shot: report and carry on
        res["notes"].append(f"{where}: FAILED: {type(e).__name__}: {e}")
        traceback.print_exc()
        return None


def scellis_side(res: dict, records: dict, store: str, a) -> None:
    all_plans(res, records, a)
    partial(res, a)
    # QLoRA first: a run cut short by a time limit still has the showcase's own row
    for name in sorted(records, key=lambda n: ("qlora", "lora", "full").index(n)):
        for mode in a.modes:
            print(f"training {name} on {a.device}, {mode} steps ...", flush=True)
            got = stage(res, f"{name} training ({mode})", train, records[name], store, mode, a)
            res["runs"][name][f"train_{mode}"] = got
            for n in (got or {}).get("notes", []):
                res["notes"].append(f"{name} training ({mode}): {n}")
            partial(res, a)


def partial(res: dict, a) -> None:
    """Write the report as it stands, so a run stopped from outside keeps what it has."""
    try:
        report(res, Path(a.out))
    except Exception as e:  # noqa: BLE001 - the final report is what matters
        print(f"(partial report not written: {type(e).__name__}: {e})", flush=True)


def peer_side(res: dict, folder: Path, record: Path, a) -> None:
    dev, why = peer_device(a.peer_device)
    res["peer_device"] = dev
    if dev is None:
        res["notes"].append(why)
        return
    a.peer_device = dev
    batches = stage(res, "torch batches", torch_batches, record, a)
    if batches is None:
        return
    kinds = ["full", "lora"]
    try:
        import peft  # noqa: F401
    except ImportError:
        kinds = ["full"]
        res["notes"].append("no torch LoRA row: peft is not importable here")
    for kind in kinds:
        print(f"torch {dev}: {kind} ...", flush=True)
        got = stage(res, f"torch {kind}", torch_run, folder, batches, kind, a)
        free_torch(dev)
        if got is not None:
            res["peer"][kind] = got
    res["notes"].append("no torch QLoRA row: 4-bit layers in torch need bitsandbytes")


def lora_head(res: dict) -> list[str]:
    """``lm_head`` when Scellis' "*" adapts the head too (then peft is told to as well)."""
    row = res["runs"].get("lora") or {}
    t = next((row[k] for k in ("train_replay", "train_eager") if row.get(k)), {})
    return ["lm_head"] if any(p.startswith("head") for p in t.get("adapted", [])) else []


def lora_init(res: dict) -> dict:
    """The LoRA run's initial A matrices (taken out of the JSON: they are data)."""
    out = {}
    for mode in ("replay", "eager"):
        for name in FINETUNE:
            t = (res["runs"].get(name) or {}).get(f"train_{mode}") or {}
            got = t.pop("initial_a", None)
            if name == "lora" and got and not out:
                out = got
    return out


def args_of(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for qlora_showcase.md and .json")
    ap.add_argument("--tiny", action="store_true", help="a tiny decoder (smoke test)")
    ap.add_argument("--device", default="webgpu", help="scellis device: webgpu | reference")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--context", type=int, default=None, help="default 256 (tiny: 32)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps (>= 1)")
    ap.add_argument("--steps", type=int, default=8, help="timed steps")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--budget", default="4GiB", help="the budget of the webgpu-spec plan")
    ap.add_argument(
        "--device-budget",
        default=None,
        help="memory of --device for its plan and the training runs (WebGPU reports none)",
    )
    ap.add_argument("--peer-device", default="auto", help="auto (CUDA if any) | cuda | cpu | none")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--modes",
        default="replay,eager",
        help="Scellis step modes to train: replay (the default), eager (--no-replay)",
    )
    ap.add_argument("--work", help="keep the model, records and store here (default: a temp dir)")
    a = ap.parse_args(argv)
    a.context = a.context or (32 if a.tiny else 256)
    a.modes = [m for m in a.modes.split(",") if m]
    if not a.modes or set(a.modes) - {"replay", "eager"}:
        ap.error("--modes: replay and/or eager")
    if a.warmup < 1 or a.steps < 1:
        ap.error("--warmup and --steps must be >= 1")
    return a


def adapter_name(device: str) -> str:
    try:
        b = get_device(device)
        info = getattr(b, "info", None)
        return getattr(info, "name", None) or device
    except Exception as e:  # noqa: BLE001 - only a label
        return f"{device} ({e})"


def main(argv=None) -> int:
    a = args_of(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res = {"args": vars(a).copy(), "runs": {}, "peer": {}, "notes": [], "peer_device": None}
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        folder = work / "hf"
        try:
            res["adapter"] = adapter_name(a.device)
            res["hf_parameters"] = build_hf(folder, TINY if a.tiny else CONFIG, a.seed)
            res["import"] = import_model(folder, work)
            records = write_records(Path(res["import"]["record"]), work, a)
            scellis_side(res, records, res["import"]["store"], a)
            res["check"] = plausibility(res)
            a.torch_head = lora_head(res)
            a.initial_a = lora_init(res)
            peer_side(res, folder, records["full"], a)
        except Exception as e:  # noqa: BLE001 - the report is still written
            res["notes"].append(f"stopped: {type(e).__name__}: {e}")
            traceback.print_exc()
        res["wall_s"] = round(time.perf_counter() - t_all, 1)
        res["notes"].append(f"total wall time {res['wall_s']} s")
        print("\n" + report(res, out))
    return 0 if res.get("plausible_eager") else 1


if __name__ == "__main__":
    sys.exit(main())
