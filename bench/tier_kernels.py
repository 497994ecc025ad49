"""Where the GPU time of one training step goes under two settings, op by op, side by
side: by default ``prod`` against ``fast`` (which of the fast tier's kernels cost more
than the ones they replace); ``--pair prod:f32,prod:mixed_f16`` compares precisions the
same way (which kernels of a mixed step cost more than its halved traffic saves).

    PYTHONPATH=src python3 bench/tier_kernels.py [--models char_tf,lstm2x64] [--top 15]
        [--pair TIER[:PRECISION],TIER[:PRECISION]] [--f32-math] [--shapes]

Each model of bench/step_time.py runs a few eager steps under each setting, then one
step with every dispatch timed by the GPU's timestamp queries (each in a compute pass of
its own: the totals include that pass's cost, the same for both settings, so compare
them as a pair, not with bench/step_time.py's milliseconds). ``--shapes`` keys the rows
by op and operand shapes (a transposed view marked T), so one layer's products show
apart from another's. Needs an adapter with ``timestamp-query`` (real GPUs and lavapipe
have it).
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

DEFAULT_PAIR = "prod:f32,fast:f32"


def parse_setting(text: str) -> tuple[str, str]:
    """``TIER[:PRECISION]`` -> (tier, precision); precision f32 unless named."""
    tier, _, precision = text.partition(":")
    return tier, precision or "f32"


def _tensors(cfg, dev) -> list:
    dtype = "f32" if cfg["kind"] == step_time.LSTM else "i32"
    return [
        (sc.tensor(x, device=dev, dtype=dtype), sc.tensor(y, device=dev, dtype=dtype))
        for x, y in step_time._batches(cfg)
    ]


def timed_step(cfg, dev, setting: tuple[str, str], warmup: int) -> dict:
    """GPU ms by op of one eager step under ``setting`` (tier, precision), after
    ``warmup`` steps."""
    tier, precision = setting
    model, loss = step_time.bench_models.build(cfg, dev, "auto")
    batches = _tensors(cfg, dev)
    run = _Run(TrainState(model, Adam(model, lr=cfg["lr"])), loss, None,
               step_time._opts(False, precision, tier))  # fmt: skip
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


def _table(name: str, rows: dict, labels: tuple[str, str], top: int, by_time=False) -> None:
    """Both settings' totals, then the ``top`` ops whose GPU time differs most (``by_time``:
    the ``top`` that take the most under either setting)."""
    first, second = labels
    one, two = rows[first], rows[second]
    total = {t: sum(r["gpu_ms"] for r in rows[t].values()) for t in labels}
    count = {t: sum(r["kernels"] for r in rows[t].values()) for t in labels}
    print(f"\n{name}: {first} {total[first]:.3f} ms in {count[first]} kernels, "
          f"{second} {total[second]:.3f} ms in {count[second]} ({second}/{first} "
          f"{total[second] / total[first]:.2f})")  # fmt: skip
    ops = set(one) | set(two)
    zero = {"kernels": 0, "gpu_ms": 0.0}

    def gap(op):
        return two.get(op, zero)["gpu_ms"] - one.get(op, zero)["gpu_ms"]

    width = max(24, *(len(op) for op in set(one) | set(two)))
    print(f"{'op':<{width}} {'first ms':>9} {'n':>4} {'second ms':>9} {'n':>4} {'difference':>10}")

    def most(op):
        return max(one.get(op, zero)["gpu_ms"], two.get(op, zero)["gpu_ms"])

    for op in sorted(ops, key=lambda o: -most(o) if by_time else -abs(gap(o)))[:top]:
        p, f = one.get(op, zero), two.get(op, zero)
        print(f"{op:<{width}} {p['gpu_ms']:9.3f} {p['kernels']:4d} {f['gpu_ms']:9.3f} "
              f"{f['kernels']:4d} {gap(op):+10.3f}")  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="char_tf,lstm2x64")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--pair", default=DEFAULT_PAIR, help="two TIER[:PRECISION] settings")
    p.add_argument("--f32-math", action="store_true",
                   help="mixed_f16 matmuls keep f32 products (matmul.HALF_MATH off)")  # fmt: skip
    p.add_argument("--shapes", action="store_true", help="rows by op and operand shapes")
    p.add_argument("--out", default="bench/out/tier_kernels.json")
    a = p.parse_args(argv)
    labels = tuple(a.pair.split(","))
    if len(labels) != 2 or len(set(labels)) != 2:
        print(f"--pair takes two different settings, got {a.pair!r}", file=sys.stderr)
        return 2
    if a.f32_math:
        from scellis.devices.webgpu.kernels import matmul as matmul_kernels

        matmul_kernels.HALF_MATH = False
    dev = sc.devices.get_device("webgpu")
    if "timestamp-query" not in dev.gpu.info.features:
        print(f"the adapter {dev.gpu.info.name!r} has no timestamp queries", file=sys.stderr)
        return 2
    print(f"device webgpu ({dev.gpu.info.name})")
    dev.label_shapes = a.shapes
    results = {}
    for name in a.models.split(","):
        cfg = step_time.CONFIGS[name]
        rows = {t: timed_step(cfg, dev, parse_setting(t), a.warmup) for t in labels}
        _table(name, rows, labels, a.top, by_time=a.shapes)
        results[name] = rows
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    record = {"adapter": dev.gpu.info.name, "pair": labels, "results": results}
    Path(a.out).write_text(json.dumps(record))
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
