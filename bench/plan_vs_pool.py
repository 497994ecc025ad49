"""The memory plan against the WebGPU buffer pool: planned peak vs what the pool held.

For each record (the examples/ records and bench/records/, shrunk to small batch sizes
so a software GPU runs them), a real run (``run.session.start_run``: the plan, the
data, the train loop with its guard and clipping, a validation pass at the end) on a
fresh WebGPU backend, eager and with replayed steps. Columns:

- ``planned``: the run's plan event (``peak``: the step, or the replayed schedule's
  residency, with an evaluation forward beside what a step leaves);
- ``live``: the pool's high-water mark of storages in use (``peak_bytes``);
- ``held``: the high-water mark of everything the pool holds, in use or kept free for
  reuse (``held_peak_bytes``), plus the backend's scratch storage: the device memory
  the run really took;
- ``ratio``: held / planned (the declared bound: 0.90 <= ratio <= 1.0).

Usage: PYTHONPATH=src python bench/plan_vs_pool.py [--markdown] [--only NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.run.options import RunOptions  # noqa: E402
from scellis.run.session import start_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEXT = ["data.max_chars=3000"]

# (name, file, edits): small batches and short contexts, the models' own blocks
RECORDS = [
    ("lstm_forecaster", "examples/lstm_forecaster.sml", ["batch_size=8", "eval.batch_size=16"]),
    ("tcn_forecaster", "examples/tcn_forecaster.sml", ["batch_size=8", "eval.batch_size=16"]),
    ("char_transformer", "examples/char_transformer.sml",
     ["batch_size=2", "eval.batch_size=4", *TEXT]),
    ("char_transformer_lora", "examples/char_transformer_lora.sml",
     ["batch_size=2", "eval.batch_size=4", *TEXT]),
    ("lstm2x256", "bench/records/lstm2x256.sml",
     ["batch_size=4", "eval.batch_size=8", "blocks.lstm.hidden_size=64",
      "blocks.head.in_features=64", "data.window=16", "inputs.window.shape=[batch, 16, 1]"]),
    ("tf_d384", "bench/records/tf_d384.sml",
     ["batch_size=1", "eval.batch_size=2", "blocks.body.num_layers=1",
      "data.context=32", "inputs.ids.shape=[batch, 32]", "blocks.pos.max_len=32", *TEXT]),
]  # fmt: skip


def measure(path: str, edits: list[str], replay: bool, steps: int = 6) -> dict:
    """One run of ``steps`` steps on a fresh backend: the plan's peak and the pool's."""
    dev = WebGPUBackend()
    rec = ROOT / path
    # a validation pass at the end, one batch of the size the plan counts
    val_rows = next(int(e.split("=")[1]) for e in edits if e.startswith("eval.batch_size="))
    opts = RunOptions(max_steps=steps, set=list(edits), replay=replay, val_rows=val_rows,
                      log_every=steps)  # fmt: skip

    async def drive():
        s = start_run(rec.read_bytes(), str(rec), options=opts, device=dev,
                      base_dir=rec.parent, trusted=True)  # fmt: skip
        return [e.to_dict() async for e in s.events()]

    events = asyncio.run(drive())
    plan = next(e for e in events if e["kind"] == "plan")
    end = next(e for e in events if e["kind"] in ("end", "error"))
    if end["kind"] == "error":
        raise RuntimeError(end)
    mem = dev.memory()
    held = mem["held_peak_bytes"] + mem["scratch_bytes"]
    return {
        "planned": plan["peak"],
        "step_peak": plan["step_peak"],
        "eval_peak": plan["eval_peak"],
        "replay_bytes": plan["replay_bytes"],
        "scratch": mem["scratch_bytes"],
        "live": mem["peak_bytes"],
        "held": held,
        "ratio": held / plan["peak"],
        "replayed": (end.get("replay") or {}).get("replayed_steps", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="one record's name")
    ap.add_argument("--markdown", action="store_true", help="a table for bench/RESULTS.md")
    args = ap.parse_args()
    rows = []
    for name, path, edits in RECORDS:
        if args.only and name != args.only:
            continue
        for replay in (False, True):
            r = measure(path, edits, replay)
            rows.append((name, "replayed" if replay else "eager", r))
            if not args.markdown:
                print(name, rows[-1][1], r, flush=True)
    if args.markdown:
        print("| record | mode | planned | live peak | held peak | held / planned |")
        print("|---|---|---:|---:|---:|---:|")
        for name, mode, r in rows:
            print(f"| {name} | {mode} | {r['planned']:,} | {r['live']:,} | {r['held']:,} "
                  f"| {r['ratio']:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
