"""Where the GPU time of one training step goes under ``prod`` and under ``fast``, op by
op, side by side: which of the fast tier's kernels cost more than the ones they replace.

    PYTHONPATH=src python3 bench/tier_kernels.py [--models char_tf,lstm2x64] [--top 15]

Each model of bench/step_time.py runs a few eager f32 steps under each tier, then one
step with every dispatch timed by the GPU's timestamp queries (each in a compute pass of
its own: the totals include that pass's cost, the same for both tiers, so compare them
as a pair, not with bench/step_time.py's milliseconds). Needs an adapter with
``timestamp-query`` (a real GPU; lavapipe has none).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import step_time  # noqa: E402  (bench/step_time.py: the models and their batches)

import scellis as sc  # noqa: E402
from scellis.catalog.optim import Adam  # noqa: E402
from scellis.train.loop import _Run  # noqa: E402
from scellis.train.state import TrainState  # noqa: E402

TIERS = ("prod", "fast")


def _tensors(cfg, dev) -> list:
    dtype = "f32" if cfg["kind"] == step_time.LSTM else "i32"
    return [
        (sc.tensor(x, device=dev, dtype=dtype), sc.tensor(y, device=dev, dtype=dtype))
        for x, y in step_time._batches(cfg)
    ]


def timed_step(cfg, dev, tier: str, warmup: int) -> dict:
    """GPU seconds by op of one eager step under ``tier``, after ``warmup`` steps."""
    model, loss = step_time.bench_models.build(cfg, dev, "auto")
    batches = _tensors(cfg, dev)
    run = _Run(TrainState(model, Adam(model, lr=cfg["lr"])), loss, None,
               step_time._opts(False, "f32", tier))  # fmt: skip
    model.train()
    for k in range(warmup):
        run.step(*batches[k % 4])
    asyncio.run(run.log())
    dev.gpu.start_timing()
    run.step(*batches[warmup % 4])
    asyncio.run(run.log())
    times = asyncio.run(dev.gpu.stop_timing())
    by_op: dict = collections.defaultdict(lambda: [0, 0.0])
    for label, seconds in times:
        by_op[label][0] += 1
        by_op[label][1] += seconds
    return {op: {"kernels": n, "gpu_ms": s * 1e3} for op, (n, s) in by_op.items()}


def _table(name: str, rows: dict, top: int) -> None:
    prod, fast = rows["prod"], rows["fast"]
    total = {t: sum(r["gpu_ms"] for r in rows[t].values()) for t in TIERS}
    count = {t: sum(r["kernels"] for r in rows[t].values()) for t in TIERS}
    print(f"\n{name}: prod {total['prod']:.3f} ms in {count['prod']} kernels, "
          f"fast {total['fast']:.3f} ms in {count['fast']} (fast/prod "
          f"{total['fast'] / total['prod']:.2f})")  # fmt: skip
    ops = set(prod) | set(fast)
    zero = {"kernels": 0, "gpu_ms": 0.0}

    def gap(op):
        return fast.get(op, zero)["gpu_ms"] - prod.get(op, zero)["gpu_ms"]

    print(f"{'op':>24} {'prod ms':>9} {'n':>4} {'fast ms':>9} {'n':>4} {'fast-prod':>10}")
    for op in sorted(ops, key=lambda o: -abs(gap(o)))[:top]:
        p, f = prod.get(op, zero), fast.get(op, zero)
        print(f"{op:>24} {p['gpu_ms']:9.3f} {p['kernels']:4d} {f['gpu_ms']:9.3f} "
              f"{f['kernels']:4d} {gap(op):+10.3f}")  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="char_tf,lstm2x64")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--out", default="bench/out/tier_kernels.json")
    a = p.parse_args(argv)
    dev = sc.devices.get_device("webgpu")
    if "timestamp-query" not in dev.gpu.info.features:
        print(f"the adapter {dev.gpu.info.name!r} has no timestamp queries", file=sys.stderr)
        return 2
    print(f"device webgpu ({dev.gpu.info.name})")
    results = {}
    for name in a.models.split(","):
        rows = {t: timed_step(step_time.CONFIGS[name], dev, t, a.warmup) for t in TIERS}
        _table(name, rows, a.top)
        results[name] = rows
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"adapter": dev.gpu.info.name, "results": results}))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
