"""QLoRA at ~1.1B parameters: a TinyLlama-shaped decoder imported, planned and fine-tuned
with an NF4 base and LoRA adapters, natively, beside peft on an f32 base.

Usage::

    PYTHONPATH=src python3 bench/qlora_1b.py --out OUT                    # 1.1B, GPU host
    PYTHONPATH=src python3 bench/qlora_1b.py --shape tiny --out /tmp/q    # smoke, lavapipe
    PYTHONPATH=src python3 bench/qlora_1b.py --shape split --out /tmp/q   # split tensors

Shapes (``--shape``):

- ``1b``: hidden 2048, 22 layers, 32 heads, 4 key/value heads, SwiGLU 5632, vocabulary
  32000, untied head (1,100,048,384 parameters, TinyLlama's); context 256, batch 1.
  The Hugging Face folder is written in bfloat16 (2.2 GB on disk; made in bf16, so the
  host never holds the model in f32 for it).
- ``tiny``: hidden 64, 2 layers, 4 heads (2 key/value), SwiGLU 128, vocabulary 256.
- ``split``: ``tiny`` with a vocabulary of 2048, trained on a device whose
  ``maxStorageBufferBindingSize`` is lowered to 256 KiB and its storage bindings per
  stage to the spec's 8 (``--limits``), so the embedding, the f32 head weight and the
  logits are each wider than one binding: the planner and the kernels split them into
  binding windows. The same
  record is also trained on the unrestricted device; the two loss curves are compared.

Stages, each through the path a user takes (bench/qlora_showcase.py's pieces):

1. ``transformers.LlamaForCausalLM`` with seeded random weights, ``save_pretrained``.
2. ``scellis import DIR --to base.sml --store STORE`` (a subprocess: wall time and the
   process's peak resident memory, ``peak_rss_mib``: the folder's weights are read
   tensor by tensor, so it stays far below their size).
3. The QLoRA record: the imported one with the context set, text data (made-up words,
   ``tokenizer: char``), ``finetune:`` LoRA rank 8 alpha 16 on every dense block
   (``target_modules: "*"``) and ``quantize_base: nf4``.
4. ``scellis plan --json --no-validate`` with ``--budget`` (default 8GiB) on the WebGPU
   spec's limits and on ``--device``'s own, replayed steps (the runs do not validate).
5. Training on ``--device`` (replayed steps; the first three run eagerly and record):
   ``--warmup`` untimed + ``--steps`` timed steps, each ending on its loss readback;
   ms/step (median), the backend's device-memory peak (model building included),
   first and last loss, and the run's own plan (its device's limits).
6. The peer: the same folder in PyTorch on CUDA (``--peer-device``), f32 base (TF32
   off), peft LoRA of the same rank, targets and initial A matrices, AdamW, the same
   batches: ms/step and ``torch.cuda.max_memory_allocated``. Then the exact peer: the
   same again over the run's own base values (its NF4 codes decoded on the device after
   the run, put over the folder's weights), whose losses must match Scellis' within
   ``NF4_PEER_TOL``: the same function, float rounding apart. Against the f32 base the
   gap is NF4's rounding, reported only.

Output: OUT/qlora_1b.md (a table) and OUT/qlora_1b.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import qlora_showcase as show

from scellis.devices.base import get_device
from scellis.ir.limits import human

LLAMA_1B = {
    "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 4,
    "num_hidden_layers": 22, "intermediate_size": 5632, "vocab_size": 32000,
    "max_position_embeddings": 2048,
}  # fmt: skip
TINY = {**show.TINY, "num_key_value_heads": 2}
# the spec's 8 storage bindings per stage and 256 KiB windows: the 2048 x 64 embedding,
# the f32 head weight before it is quantised (512 KiB each) and the logits (2 x 32 x 2048
# f32) take two windows each, as a 1.1B model's embedding and head do under 128 MiB
SPLIT_LIMITS = {"max_storage_buffer_binding_size": 256 << 10,
                "max_storage_buffers_per_shader_stage": 8}  # fmt: skip
SHAPES = {
    "1b": {"llama": LLAMA_1B, "context": 256, "batch": 1, "dtype": "bfloat16", "limits": {}},
    "tiny": {"llama": TINY, "context": 32, "batch": 2, "dtype": "float32", "limits": {}},
    "split": {"llama": {**TINY, "vocab_size": 2048}, "context": 32, "batch": 2,
              "dtype": "float32", "limits": SPLIT_LIMITS},
}  # fmt: skip


# ``scellis ARGS`` that reports, on its last stderr line, its own peak resident memory
# (VmHWM: counted from the exec, unlike a child's rusage, which starts from the
# parent's size at the fork)
PEAK_CLI = """import runpy, sys
sys.argv = ["scellis", *sys.argv[1:]]
try:
    runpy.run_module("scellis.cli.main", run_name="__main__")
finally:
    hwm = [x for x in open("/proc/self/status") if x.startswith("VmHWM")]
    print("VmHWM", hwm[0].split()[1] if hwm else "?", file=sys.stderr)
"""


def import_model(folder: Path, work: Path) -> dict:
    """``scellis import`` (as qlora_showcase's ``import_model``) with its peak memory."""
    to, store = work / "base.sml", work / "store"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(show.ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-c", PEAK_CLI, "import", str(folder), "--to", str(to),
           "--store", str(store), "--json"]  # fmt: skip
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=show.ROOT)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"scellis import failed (exit {p.returncode}): {p.stderr[-2000:]}")
    kib = p.stderr.strip().splitlines()[-1].split()[-1]
    return {"wall_s": round(wall, 2), "record": str(to), "store": str(store),
            "peak_rss_mib": round(int(kib) / 1024, 1) if kib.isdigit() else None,
            **json.loads(p.stdout.strip().splitlines()[-1])}  # fmt: skip


def lowered_device(a):
    """``--device`` with ``--limits`` lowered (a fresh backend on the same adapter)."""
    from scellis.devices.webgpu import WebGPUBackend

    base = get_device(a.device)
    return WebGPUBackend(gpu=base.gpu, limits=a.limits)


def plans(res: dict, record: Path, a) -> None:
    """Replayed steps with no validation pass, as the runs train (a validation forward
    at the record's evaluation batch, over the 32000-word vocabulary, would add
    gigabytes of logits at 1B)."""
    for where, device in (("spec", "webgpu-spec"), ("device", a.device)):
        got = show.stage(res, f"plan on {device}", show.plan, record, device, a.budget, True,
                         False)  # fmt: skip
        res[f"plan_{where}"] = got
        for problem in (got or {}).get("problems", [])[:2]:
            res["notes"].append(f"plan on {device}: {problem}")


def scellis_runs(res: dict, record: Path, store: str, a) -> None:
    if a.limits:
        print(f"training on {a.device} with limits {a.limits} ...", flush=True)
        low = show.stage(res, "lowered limits", lowered_device, a)
        if low is not None:
            res["split"] = show.stage(res, "training (split)", show.train, record, store,
                                      "replay", a, low)  # fmt: skip
            show.reset_memory(low)
    print(f"training on {a.device} ...", flush=True)
    a.collect_base = a.peer_device != "none"
    res["scellis"] = show.stage(res, "training", show.train, record, store, "replay", a)
    # the adapters' initial A matrices seed peft's, and the base's decoded values the
    # exact peer's: data, not results (kept out of the JSON)
    a.initial_a = (res["scellis"] or {}).pop("initial_a", None)
    a.base_values = (res["scellis"] or {}).pop("base_values", None)
    (res.get("split") or {}).pop("initial_a", None)


def peer(res: dict, folder: Path, record: Path, a) -> None:
    dev, why = show.peer_device(a.peer_device)
    res["peer_device"] = dev
    ours = res.get("scellis") or {}
    if dev is None or not a.initial_a:
        res["notes"].append(why or "no peer: the Scellis run failed (its A matrices seed peft's)")
        return
    a.peer_device = dev
    a.torch_head = ["lm_head"] if any(p.startswith("head") for p in ours["adapted"]) else []
    batches = show.stage(res, "torch batches", show.torch_batches, record, a)
    if batches is None:
        return
    print(f"torch {dev}: peft LoRA, f32 base ...", flush=True)
    res["peer"] = show.stage(res, "torch peft", show.torch_run, folder, batches, "lora", a)
    if a.base_values:
        show.free_torch(dev)
        print(f"torch {dev}: peft LoRA over the NF4 base's values ...", flush=True)
        res["peer_nf4"] = show.stage(res, "torch peft, nf4 values", show.torch_run, folder,
                                     batches, "lora", a, a.base_values)  # fmt: skip


# Scellis' QLoRA against peft over the same decoded base: both f32, different summation
# orders; Adam's first steps (about lr in every coordinate, whatever the gradient's size)
# can turn those last bits into a small loss difference
NF4_PEER_TOL = 1e-2


def table(res: dict) -> str:
    rows = [("scellis " + res["args"]["device"], res.get("scellis"))]
    if res.get("split") is not None or res["args"]["limits"]:
        rows.insert(0, (f"scellis, limits {res['args']['limits']}", res.get("split")))
    if res.get("peer_device"):
        rows.append((f"torch {res['peer_device']}: peft LoRA, f32 base", res.get("peer")))
        if res.get("peer_nf4") is not None:
            rows.append((f"torch {res['peer_device']}: peft LoRA, f32 copy of the NF4 base's "
                         "values", res.get("peer_nf4")))  # fmt: skip
    out = ["| run | trainable | plan (its device) | device memory | ms/step | first loss "
           "| last loss |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, r in rows:
        r = r or {}
        p = r.get("train_plan")
        out.append(
            f"| {name} | {show.cell(r.get('trainable'), '{:,}'.format)} "
            f"| {show._plan_cell(p)} | {show.cell(r.get('device_peak'), human)} "
            f"| {show.cell(r.get('ms_per_step'))} | {show.loss(r.get('first_loss'))} "
            f"| {show.loss(r.get('last_loss'))} |"
        )
    return "\n".join(out)


def agreement(res: dict) -> list[str]:
    """Loss curves that must agree: split against unsplit (same device, same maths but
    windowed kernels), and Scellis against peft over the same base values (the NF4
    codes decoded: the same function, float rounding apart). Against peft's f32 base the
    gap is NF4's rounding, reported but not checked: it grows with the model and the
    steps' size."""
    said, ours = [], res.get("scellis") or {}

    def gap(other: dict | None, name: str, tol: float | None) -> None:
        if not other or not ours.get("losses") or not other.get("losses"):
            return
        diff = max(abs(x - y) for x, y in zip(ours["losses"], other["losses"], strict=False))
        res[f"{name}_gap"] = diff
        verdict = "" if tol is None else " (agree)" if diff < tol else " (DIFFER)"
        said.append(f"{name}: max |loss difference| over the steps {diff:.2e}{verdict}")

    gap(res.get("split"), "split vs unsplit", 1e-4)
    gap(res.get("peer_nf4"), "scellis nf4 vs peft on the nf4 values", NF4_PEER_TOL)
    gap(res.get("peer"), "scellis nf4 vs peft f32 (NF4 rounding, not a check)", None)
    return said


def report(res: dict, out: Path) -> str:
    a, imp = res["args"], res.get("import") or {}
    plans_said = ", ".join(
        f"{w}: {show._plan_cell(res.get(f'plan_{w}'))}" for w in ("spec", "device")
    )
    lines = [
        f"# QLoRA at {a['shape']} ({show.cell(res.get('hf_parameters'), '{:,}'.format)} "
        "parameters)",
        "",
        f"device {a['device']} ({res.get('adapter', '-')}); batch {a['batch']}, context "
        f"{a['context']}, lr {a['lr']}; {a['warmup']} warm-up + {a['steps']} timed steps; "
        f"folder {a['dtype']} {show.cell(res.get('folder_mib'))} MiB in "
        f"{show.cell(res.get('folder_s'))} s",
        f"import: {imp.get('wall_s', '-')} s, peak RSS {show.cell(imp.get('peak_rss_mib'))} "
        f"MiB; plans (replayed, no validation, budget {a['budget']}): {plans_said}",
        "",
        table(res),
        "",
        *[f"- {s}" for s in agreement(res)],
        *[f"- {n}" for n in res["notes"]],
    ]
    text = "\n".join(lines) + "\n"
    (out / "qlora_1b.md").write_text(text)
    (out / "qlora_1b.json").write_text(json.dumps(res, indent=1, default=str))
    return text


def args_of(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for qlora_1b.md and .json")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="1b")
    ap.add_argument("--device", default="webgpu")
    ap.add_argument("--batch", type=int, default=None, help="default: the shape's")
    ap.add_argument("--context", type=int, default=None, help="default: the shape's")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps (>= 3: recording)")
    ap.add_argument("--steps", type=int, default=5, help="timed steps")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--budget", default="8GiB", help="the plans' memory budget")
    ap.add_argument("--limits", default=None,
                    help="lowered device limits as JSON (default: the shape's)")  # fmt: skip
    ap.add_argument("--peer-device", default="auto", help="auto (CUDA if any) | cuda | cpu | none")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", help="keep the folder, records and store here (default: temp)")
    a = ap.parse_args(argv)
    shape = SHAPES[a.shape]
    a.batch = a.batch or shape["batch"]
    a.context = a.context or shape["context"]
    a.dtype = shape["dtype"]
    a.limits = json.loads(a.limits) if a.limits is not None else shape["limits"]
    if a.warmup < 1 or a.steps < 1:
        ap.error("--warmup and --steps must be >= 1")
    # what qlora_showcase's train and plan read
    a.device_budget, a.modes = a.budget, ["replay"]
    return a


def run(res: dict, work: Path, a) -> None:
    folder = work / "hf"
    res["adapter"] = show.adapter_name(a.device)
    t0 = time.perf_counter()
    res["hf_parameters"] = show.build_hf(folder, SHAPES[a.shape]["llama"], a.seed, a.dtype)
    res["folder_s"] = round(time.perf_counter() - t0, 1)
    res["folder_mib"] = round(sum(f.stat().st_size for f in folder.iterdir()) / 2**20, 1)
    print(f"folder: {res['hf_parameters']:,} parameters in {res['folder_s']} s", flush=True)
    res["import"] = import_model(folder, work)
    print(f"imported in {res['import']['wall_s']} s", flush=True)
    record = show.write_records(Path(res["import"]["record"]), work, a, ["qlora"])["qlora"]
    plans(res, record, a)
    scellis_runs(res, record, res["import"]["store"], a)
    peer(res, folder, record, a)


def main(argv=None) -> int:
    a = args_of(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res = {"args": vars(a).copy(), "notes": []}
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            run(res, work, a)
        except Exception as e:  # noqa: BLE001 - the report is still written
            res["notes"].append(f"stopped: {type(e).__name__}: {e}")
            traceback.print_exc()
    res["wall_s"] = round(time.perf_counter() - t_all, 1)
    res["notes"].append(f"total wall time {res['wall_s']} s")
    print("\n" + report(res, out))
    ok = (res.get("scellis") or {}).get("last_loss") is not None
    return 0 if ok and all("DIFFER" not in s for s in agreement(res)) else 1


if __name__ == "__main__":
    sys.exit(main())
