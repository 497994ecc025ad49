"""Subgroup reductions against the workgroup-memory trees, per op: sum, softmax, layer norm.

Usage::

    PYTHONPATH=src python3 bench/subgroups.py --out subgroups.json            # lavapipe sizes
    PYTHONPATH=src python3 bench/subgroups.py --sizes 4096x1024,16384x4096,65536x256 \\
        --attention 8x6x1024x64 --out subgroups_gpu.json                       # a real GPU

Both variants run on one device in one process: two backends on the same GPU, both on the
``prod`` tier, one with the device's subgroups treated as absent (the trees, which every
tier ran before). ``--sizes`` are ROWSxD shapes reduced along D (the last axis);
``--attention`` takes BxHxTxD flash-attention forwards (the tiled kernels' row max and
sum). Each op is called ``--warmup`` times (pipeline compiles), then ``--repeats`` times
with every dispatch stamped by timestamp queries (one compute pass per dispatch): ``gpu
us`` is the median over calls of the op's dispatches' summed GPU time. ``wall us`` is
the host's time per call over ``--repeats`` calls back to back, ending with a readback,
so it includes encoding and submission. ``max rel diff`` is the largest gap between the
two variants' results over the largest |result| (prod's tolerances, train/determinism.py,
bound it). A table goes to stdout and every figure to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.devices.kernel_choice import choosing  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.ops.attention import flash_attention  # noqa: E402
from scellis.ops.composites import layer_norm, softmax  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402
from scellis.train.determinism import KERNELS  # noqa: E402

OPS = {
    "sum": lambda x: x.sum(-1),
    "softmax": lambda x: softmax(x, -1),
    "layer_norm": lambda x: layer_norm(x, x.shape[-1]),
}
VARIANTS = ("tree", "subgroup")


def backends(base) -> dict:
    """The two variants on ``base``'s GPU, both on prod."""
    out = {}
    for name in VARIANTS:
        dev = WebGPUBackend(gpu=base.gpu)
        if name == "tree":
            dev.info = dataclasses.replace(base.info, device_features=[])
        out[name] = dev
    return out


def parse(text: str, n: int) -> list[tuple[int, ...]]:
    shapes = [tuple(int(v) for v in item.lower().split("x")) for item in text.split(",") if item]
    for s in shapes:
        if len(s) != n or min(s) < 1:
            sys.exit(f"error: {'x'.join(map(str, s))} is not {n} positive sizes joined by x")
    return shapes


def gpu_times(devs: dict, calls: dict, repeats: int) -> dict:
    """GPU seconds of each call, per variant: the variants' calls alternate (tree,
    subgroup, tree, ...) in one timed stretch, so a load that comes and goes on the
    machine touches both alike. ``calls[variant]()`` runs the op once."""
    gpu = next(iter(devs.values())).gpu  # the variants share it
    counts = {}
    for v, dev in devs.items():  # the dispatches one call makes
        before = dev.stats["dispatches"]
        calls[v]()
        counts[v] = dev.stats["dispatches"] - before
    gpu.start_timing()
    for _ in range(repeats):
        for v in VARIANTS:
            calls[v]()
    stamps = [t for _, t in run_sync(gpu.stop_timing())]
    out, at = {v: [] for v in VARIANTS}, 0
    for _ in range(repeats):
        for v in VARIANTS:
            out[v].append(sum(stamps[at : at + counts[v]]))
            at += counts[v]
    return out


def wall_time(call, repeats: int) -> float:
    """Host seconds per call over ``repeats`` calls back to back, up to a readback."""
    t0 = time.perf_counter()
    for _ in range(repeats):
        y = call()
    y.numpy()
    return (time.perf_counter() - t0) / repeats


def case(devs, name: str, shape, arrays: list, args) -> dict:
    row = {"op": name, "shape": "x".join(map(str, shape))}
    calls, results = {}, {}
    for variant, dev in devs.items():
        inputs = [sc.tensor(a, device=dev) for a in arrays]
        calls[variant] = lambda inputs=inputs: OPS_ALL[name](*inputs)
        for _ in range(args.warmup):  # compiles, pool
            results[variant] = calls[variant]().numpy()
    times = gpu_times(devs, calls, args.repeats)
    for variant in VARIANTS:
        row[f"{variant}_gpu_us"] = statistics.median(times[variant]) * 1e6
        row[f"{variant}_gpu_min_us"] = min(times[variant]) * 1e6
        row[f"{variant}_wall_us"] = wall_time(calls[variant], args.repeats) * 1e6
    pairs = [t / max(s, 1e-12) for t, s in zip(times["tree"], times["subgroup"])]
    row["gpu_speedup"] = statistics.median(pairs)  # tree time / subgroup time, per pair
    a, b = (results[v].astype(np.float64) for v in VARIANTS)
    row["max_rel_diff"] = float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-30))
    return row


OPS_ALL = {**OPS, "flash_attention": lambda q, k, v: flash_attention(q, k, v)}


def table(rows: list[dict]) -> str:
    head = (
        f"{'op':<16}{'shape':>15}{'tree gpu us':>13}{'(min)':>9}{'subgroup gpu us':>17}"
        f"{'(min)':>9}{'speedup':>9}{'tree wall us':>14}{'subgroup wall us':>18}"
        f"{'max rel diff':>14}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['op']:<16}{r['shape']:>15}{r['tree_gpu_us']:>13.1f}{r['tree_gpu_min_us']:>9.1f}"
            f"{r['subgroup_gpu_us']:>17.1f}{r['subgroup_gpu_min_us']:>9.1f}"
            f"{r['gpu_speedup']:>8.2f}x{r['tree_wall_us']:>14.1f}{r['subgroup_wall_us']:>18.1f}"
            f"{r['max_rel_diff']:>14.2e}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64x1000,512x256,32x4096", help="ROWSxD shapes")
    ap.add_argument("--ops", default=",".join(OPS), help="of: " + ", ".join(OPS))
    ap.add_argument("--attention", default="1x2x128x64", help="BxHxTxD shapes ('' for none)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True, help="where the JSON goes")
    args = ap.parse_args(argv)
    ops = [o for o in args.ops.split(",") if o]
    if unknown := [o for o in ops if o not in OPS]:
        sys.exit(f"error: unknown op {unknown[0]!r}; choose from {', '.join(OPS)}")
    if args.repeats < 1 or args.warmup < 1:
        sys.exit("error: --repeats and --warmup must be at least 1")
    base = get_device("webgpu")
    if not base.info.subgroups_on:
        sys.exit(f"error: {base.info.name} has no subgroup operations to compare")
    if "timestamp-query" not in base.info.device_features:
        sys.exit(f"error: {base.info.name} has no timestamp queries to time kernels with")
    devs = backends(base)
    rng = np.random.default_rng(0)
    rows = []
    with choosing(KERNELS["prod"]):  # both variants on prod's kernels
        for rows_n, d in parse(args.sizes, 2):
            x = (rng.standard_normal((rows_n, d)) * 3).astype(np.float32)
            rows += [case(devs, op, (rows_n, d), [x], args) for op in ops]
        for b, h, t, d in parse(args.attention, 4):
            qkv = [rng.standard_normal((b, h, t, d)).astype(np.float32) for _ in range(3)]
            rows.append(case(devs, "flash_attention", (b, h, t, d), qkv, args))
    print(f"{base.info.name} ({base.info.backend}), prod tier, {args.repeats} calls per figure")
    print(table(rows))
    report = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "adapter": dataclasses.asdict(base.info),
        "host": platform.node(),
        "command": " ".join(sys.argv),
        "rows": rows,
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
