"""Matmul throughput benchmark: scellis WebGPU vs NumPy f32 (and torch CUDA f32 if present).

Usage::

    PYTHONPATH=src python3 bench/matmul.py --sizes 256,512            # lavapipe-sized
    PYTHONPATH=src python3 bench/matmul.py --tiles auto,t64,t128      # all default shapes

``--sizes`` takes square sizes (``512``) and ``MxKxN`` shapes (``4096x64x4096``).

Method (nothing is subtracted): every backend runs ``--warmup`` untimed calls (pipeline
compile, pool fill, cuBLAS heuristics), then ``--repeats`` timed samples; a sample is
``inner`` back-to-back calls and its time divided by ``inner``, where ``inner`` is chosen
from the warm-up so one sample lasts >= ``--min-sample-ms``. WebGPU samples start with
the queue drained and end when a 4-byte readback of the last output returns (the queue
runs in order, so that waits for every matmul in the sample); the time therefore includes
host-side encoding and submission of each call and one small readback per sample. torch
samples end with ``torch.cuda.synchronize()``; TF32 is off, so it is a true f32 GEMM.
GFLOP/s = 2*M*N*K / median time. Each WebGPU result is checked on 32 rows against an f64
product with the bound of kernels/matmul.py (``err/bound`` must stay <= 1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.devices.webgpu.kernels.matmul import choose_tile  # noqa: E402
from scellis.runtime.dispatch import apply  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402

DEFAULT = "256,512,1024,2048,4096,4096x64x4096,64x4096x64,8192x1024x16"


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    shapes = []
    for item in text.split(","):
        dims = [int(d) for d in item.lower().split("x")]
        shapes.append((dims[0],) * 3 if len(dims) == 1 else tuple(dims))
    return shapes


def time_samples(run, sync, warmup: int, repeats: int, min_sample_s: float) -> dict:
    """Median seconds per call of ``run`` (see the module docstring for the method)."""
    for _ in range(warmup):
        run()
    sync()
    t0 = time.perf_counter()
    run()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, min(1000, int(min_sample_s / one) + 1))
    samples = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(inner):
            run()
        sync()
        samples.append((time.perf_counter() - t0) / inner)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "inner": inner}


def bench_webgpu(dev, a, b, tile: str, args) -> tuple[dict, float]:
    ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
    attrs = {} if tile == "auto" else {"_tile": tile}
    last = {}

    def run():
        last["y"] = apply("matmul", (ta, tb), **attrs)

    def sync():
        y = last.get("y")
        if y is None:
            dev.sync()
            return
        run_sync(dev.gpu.read_buffer(y.view.buf.handle.chunks[0], 0, 4))

    stats = time_samples(run, sync, args.warmup, args.repeats, args.min_sample_ms / 1e3)
    return stats, check_rows(dev, last["y"], a, b)


def check_rows(dev, y, a, b, rows: int = 32) -> float:
    """max err/bound over ``rows`` spread rows of the last WebGPU result."""
    m, k = a.shape
    data = run_sync(dev.read(y.view.buf))
    got = np.frombuffer(data, dtype=np.float32, count=m * b.shape[1]).reshape(m, -1)
    idx = np.linspace(0, m - 1, min(rows, m)).astype(int)
    a64, b64 = a[idx].astype(np.float64), b.astype(np.float64)
    bound = max(k, 1) * 2.0**-23 * (np.abs(a64) @ np.abs(b64))
    err = np.abs(got[idx].astype(np.float64) - a64 @ b64)
    return float(np.max(err / np.maximum(bound, 1e-30)))


def bench_numpy(a, b, args) -> dict:
    return time_samples(
        lambda: np.matmul(a, b), lambda: None, args.warmup, args.repeats, args.min_sample_ms / 1e3
    )


def bench_torch(a, b, args) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    return time_samples(
        lambda: torch.matmul(ta, tb),
        torch.cuda.synchronize,
        args.warmup,
        args.repeats,
        args.min_sample_ms / 1e3,
    )


def gflops(shape, seconds: float) -> float:
    m, k, n = shape
    return 2.0 * m * n * k / seconds / 1e9


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=DEFAULT, help="N or MxKxN, comma separated")
    p.add_argument("--tiles", default="auto", help="WebGPU tile configs: auto,t16,t32,t64,t128")
    p.add_argument("--adapter", default=None, help="substring of the adapter name/backend")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--min-sample-ms", type=float, default=50.0)
    p.add_argument("--no-numpy", action="store_true", help="skip the (slow) NumPy baseline")
    p.add_argument("--out", default="bench/out/matmul.json")
    args = p.parse_args(argv)

    dev = WebGPUBackend(adapter=args.adapter)
    tiles = args.tiles.split(",")
    rng = np.random.default_rng(0)
    print(f"adapter: {dev.info.name} ({dev.info.backend}, {dev.info.adapter_type})")
    cols = [f"webgpu[{t}]" for t in tiles] + ["numpy", "torch_cuda"]
    print(f"{'M x K x N':>20} {'tile':>5} " + " ".join(f"{c:>13}" for c in cols) + "  err/bound")
    results = []
    for shape in parse_shapes(args.sizes):
        m, k, n = shape
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        row = {"shape": list(shape), "gflops": {}, "median_ms": {}, "inner": {}}
        worst = 0.0
        for t in tiles:
            stats, ratio = bench_webgpu(dev, a, b, t, args)
            worst = max(worst, ratio)
            row["gflops"][f"webgpu[{t}]"] = gflops(shape, stats["median_s"])
            row["median_ms"][f"webgpu[{t}]"] = stats["median_s"] * 1e3
            row["inner"][f"webgpu[{t}]"] = stats["inner"]
        for name, fn in (("numpy", bench_numpy), ("torch_cuda", bench_torch)):
            stats = None if name == "numpy" and args.no_numpy else fn(a, b, args)
            if stats is not None:
                row["gflops"][name] = gflops(shape, stats["median_s"])
                row["median_ms"][name] = stats["median_s"] * 1e3
        row["auto_tile"] = choose_tile(m, n, 1, dev.limits)
        row["err_over_bound"] = worst
        results.append(row)
        cells = " ".join(f"{row['gflops'].get(c, float('nan')):>13.1f}" for c in cols)
        print(
            f"{'x'.join(map(str, shape)):>20} {row['auto_tile']:>5} {cells}  {worst:.3f}",
            flush=True,
        )
    report = {
        "adapter": {
            "name": dev.info.name,
            "vendor": dev.info.vendor,
            "backend": dev.info.backend,
            "type": dev.info.adapter_type,
            "description": dev.info.description,
        },
        "units": "GFLOP/s = 2*M*N*K / median seconds per call",
        "method": __doc__.split("Method", 1)[1].strip(),
        "args": vars(args),
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    # a result outside the error bound fails the run
    return 0 if all(r["err_over_bound"] <= 1.0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
