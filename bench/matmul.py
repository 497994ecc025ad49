"""Matmul throughput benchmark: scellis WebGPU vs torch CUDA f32 (cuBLAS, TF32 off) and NumPy.

Usage::

    PYTHONPATH=src python3 bench/matmul.py --sizes 256,512 --numpy      # lavapipe-sized
    PYTHONPATH=src python3 bench/matmul.py                              # 4096^3 + Transformer
    PYTHONPATH=src python3 bench/matmul.py --tiles auto,t128,r128       # forced tiles too

``--sizes`` takes square sizes (``512``) and ``MxKxN`` shapes (``4096x64x4096``); a
``:ta`` / ``:tb`` suffix stores A / B transposed and multiplies its ``.mT`` view (the
layouts of a Linear layer's backward: dX = dY @ W^T is ``:tb``, dW = X^T @ dY is ``:ta``).
The default list is 4096^3 and, for each Transformer projection (tokens 8192, d_model
384, MxKxN in 8192x384x1152, 8192x384x384, 8192x384x1536, 8192x1536x384), its forward
product and the two backward ones.

Method (nothing is subtracted): every backend runs ``--warmup`` untimed calls (pipeline
compile, pool fill, cuBLAS heuristics), then ``--repeats`` timed samples; a sample is
``inner`` back-to-back calls and its time divided by ``inner``, where ``inner`` is chosen
from the warm-up so one sample lasts >= ``--min-sample-ms``. Samples start with the queue
drained and end when the last result is ready (WebGPU: a 4-byte readback of the last
output, the queue running in order; torch: ``torch.cuda.synchronize()``). Each WebGPU
call is submitted as it is made, so the GPU runs while the host encodes the next. Two
WebGPU figures: ``op`` is the whole ``matmul`` op per call (shape rules, kernel choice,
output allocation, encoding, submission); ``kernel`` re-launches that op's encoded kernel
(same pipeline, bindings and output) per call, which leaves out the Python op layer:
the kernel's throughput in a stream, as torch's figure is cuBLAS's. TF32 is off in
torch, so it is a true f32 GEMM. ``--dtype f16`` runs both in f16 (``--dtype f32,f16``: each shape
in both, then a line of f16's speedup over f32 per column): scellis reads f16
(shader-f16), accumulates in f32 and stores f16; torch's f16 GEMM uses the tensor cores,
which WGSL cannot reach. TFLOP/s = 2*M*N*K / median time; ``ratio`` = WebGPU
kernel / torch. ``--calls-per-submit N`` encodes N kernel calls per queue submission (a
replayed training step submits all its launches at once), which shows what each
submission costs. ``--gpu-time`` adds each launch's GPU time from timestamp queries (one
compute pass per launch, median of 20), e.g. a K split's product and its sum apart.
Each WebGPU result is checked on 32 rows against an f64 product with the
bound of kernels/matmul.py, plus one f16 rounding of the result for f16 (``err/bound``
must stay <= 1).
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
from scellis.devices.webgpu.kernels.matmul import (  # noqa: E402
    choose_reg,
    choose_split,
    choose_tile,
)
from scellis.runtime.dispatch import apply  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402

TRANSFORMER = ((8192, 384, 1152), (8192, 384, 384), (8192, 384, 1536), (8192, 1536, 384))
DEFAULT = ",".join(
    ["4096"] + [f"{m}x{k}x{n},{m}x{n}x{k}:tb,{k}x{m}x{n}:ta" for m, k, n in TRANSFORMER]
)


def parse_shapes(text: str) -> list[tuple[int, int, int, bool, bool]]:
    """(M, K, N, A transposed, B transposed) of each item."""
    shapes = []
    for item in text.split(","):
        dims, _, flags = item.lower().partition(":")
        d = [int(x) for x in dims.split("x")]
        m, k, n = (d[0],) * 3 if len(d) == 1 else d
        shapes.append((m, k, n, "ta" in flags, "tb" in flags))
    return shapes


def label(shape) -> str:
    m, k, n, ta, tb = shape
    return f"{m}x{k}x{n}" + (":ta" if ta else "") + (":tb" if tb else "")


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


def operands(rng, shape, dtype=np.float32):
    """(A, B) as multiplied and the arrays stored: transposed operands are stored [.., C, R]."""
    m, k, n, ta, tb = shape
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32).astype(dtype)
    return (a.T if ta else a), (b.T if tb else b), a, b


def bench_webgpu(dev, stored, shape, tile: str, args) -> tuple[dict, dict, object]:
    """(op stats, kernel stats, last output) of ``tile`` (see the module docstring)."""
    ta, tb = (sc.tensor(x, device=dev) for x in stored)
    ta, tb = (ta.mT if shape[3] else ta), (tb.mT if shape[4] else tb)
    attrs = tile_attrs(tile)
    last = {}

    def op():
        last["y"] = apply("matmul", (ta, tb), **attrs)
        dev.gpu.flush()

    def sync():
        y = last.get("y")
        if y is None:
            dev.sync()
            return
        run_sync(dev.gpu.read_buffer(y.device_view.buf.handle.chunks[0], 0, 4))

    min_s = args.min_sample_ms / 1e3
    op_stats = time_samples(op, sync, args.warmup, args.repeats, min_s)
    y = last["y"]
    launches = dev.encode("matmul", [ta.device_view, tb.device_view], [y.device_view], attrs)

    per = args.calls_per_submit
    kernel_stats = time_samples(lambda: relaunch(dev, launches, per), sync, args.warmup,
                                args.repeats, min_s)  # fmt: skip
    for key in ("median_s", "min_s"):
        kernel_stats[key] /= per
    if args.gpu_time:
        kernel_stats["gpu_us"] = launch_gpu_times(dev, launches)
    return op_stats, kernel_stats, y


def relaunch(dev, launches, calls: int = 1) -> None:
    """Launch already encoded kernels again (same pipelines, bindings and buffers) ``calls``
    times and submit them: a kernel's own cost, without the op layer that encoded it."""
    launch_again(dev, launches, calls)
    dev.gpu.flush()


def launch_again(dev, launches, calls: int) -> None:
    for _ in range(calls):
        for src, grid in launches:
            dev.launch(src, grid)


def launch_gpu_times(dev, launches, repeats: int = 20) -> list[float] | None:
    """Median GPU microseconds of each launch (timestamp queries), or None without them."""
    if "timestamp-query" not in getattr(dev.gpu.info, "features", ()):
        return None
    dev.gpu.start_timing()
    launch_again(dev, launches, repeats)
    stamps = run_sync(dev.gpu.stop_timing())
    return [
        statistics.median(t for _, t in stamps[i :: len(launches)]) * 1e6
        for i in range(len(launches))
    ]


def tile_attrs(tile: str) -> dict:
    """The matmul attrs forcing ``tile``: "auto", a tile name, either with "/kN" (K split
    in N parts, then summed), e.g. "r128/k8" or "auto/k16"."""
    name, _, parts = tile.partition("/k")
    attrs = {} if name == "auto" else {"_tile": name}
    if parts:
        attrs["_split"] = int(parts)
    return attrs


def check_rows(dev, y, a, b, rows: int = 32) -> float:
    """max err/bound over ``rows`` spread rows of a WebGPU result ``y`` = ``a @ b``."""
    m, k = a.shape
    data = run_sync(dev.read(y.device_view.buf))
    got = np.frombuffer(data, dtype=a.dtype, count=m * b.shape[1]).reshape(m, -1)
    idx = np.linspace(0, m - 1, min(rows, m)).astype(int)
    a64, b64 = a[idx].astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    bound = max(k, 1) * 2.0**-23 * (np.abs(a64) @ np.abs(b64))
    if a.dtype == np.float16:  # f32 accumulation, then one rounding to f16
        bound += 2.0**-11 * np.abs(want)
    err = np.abs(got[idx].astype(np.float64) - want)
    return float(np.max(err / np.maximum(bound, 1e-30)))


def bench_numpy(a, b, args) -> dict:
    return time_samples(
        lambda: np.matmul(a, b), lambda: None, args.warmup, args.repeats, args.min_sample_ms / 1e3
    )


def torch_cuda_f32():
    """torch with TF32 off (true f32 GEMMs, as the WGSL kernels do), or None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def bench_torch(stored, shape, args) -> dict | None:
    torch = torch_cuda_f32()
    if torch is None:
        return None
    ta, tb = (torch.from_numpy(x).cuda() for x in stored)
    ta, tb = (ta.mT if shape[3] else ta), (tb.mT if shape[4] else tb)
    return time_samples(
        lambda: torch.matmul(ta, tb),
        torch.cuda.synchronize,
        args.warmup,
        args.repeats,
        args.min_sample_ms / 1e3,
    )


def auto_tile(m: int, k: int, n: int, limits: dict) -> str:
    """The kernel a 2-D product takes: a REGS or TILES tile, ``/kN`` for a K split in N."""
    parts, tile = choose_split(m, n, k, 1, limits)
    if parts > 1:
        return f"{tile or choose_reg(m, n, k // parts, parts, limits)}/k{parts}"
    return choose_reg(m, n, k, 1, limits) or choose_tile(m, n, 1, limits)


def tflops(shape, seconds: float) -> float:
    m, k, n = shape[:3]
    return 2.0 * m * n * k / seconds / 1e12


def bench_shape(dev, shape, dtype: str, tiles, cols, rng, args) -> dict:
    """One printed row: ``shape`` in ``dtype`` on each WebGPU tile, NumPy and torch."""
    m, k, n, _, _ = shape
    a, b, *stored = operands(rng, shape, np.float16 if dtype == "f16" else np.float32)
    row = {"shape": label(shape), "dtype": dtype, "tflops": {}, "median_ms": {}, "inner": {}}
    worst = 0.0
    for t in tiles:
        op_stats, kernel_stats, y = bench_webgpu(dev, stored, shape, t, args)
        worst = max(worst, check_rows(dev, y, a, b))
        del y
        for w, stats in (("kernel", kernel_stats), ("op", op_stats)):
            row["tflops"][f"{w}[{t}]"] = tflops(shape, stats["median_s"])
            row["median_ms"][f"{w}[{t}]"] = stats["median_s"] * 1e3
            row["inner"][f"{w}[{t}]"] = stats["inner"]
        if kernel_stats.get("gpu_us"):
            row.setdefault("gpu_us", {})[t] = kernel_stats["gpu_us"]
    for name in ("numpy", "torch"):
        if name == "numpy":
            stats = bench_numpy(a, b, args) if args.numpy else None
        else:
            stats = bench_torch(stored, shape, args)
        if stats is not None:
            row["tflops"][name] = tflops(shape, stats["median_s"])
            row["median_ms"][name] = stats["median_s"] * 1e3
    torch_tf = row["tflops"].get("torch")
    row["ratio"] = row["tflops"][cols[0]] / torch_tf if torch_tf else None
    row["auto_tile"] = auto_tile(m, k, n, dev.limits)
    row["err_over_bound"] = worst
    cells = " ".join(f"{row['tflops'].get(c, float('nan')):>13.2f}" for c in cols)
    ratio = f"{row['ratio']:.2f}" if row["ratio"] else "-"
    line = f"{label(shape):>18} {dtype + ' ' + row['auto_tile']:>9} {cells} {ratio:>5} {worst:.3f}"
    gpu_us = row.get("gpu_us", {})
    line += "".join(
        f"  gpu[{t}] " + "+".join(f"{u:.1f}" for u in us) + " us" for t, us in gpu_us.items()
    )
    print(line, flush=True)
    return row


def f16_speedup(f32_row: dict, f16_row: dict, cols) -> str:
    """Per column, the f16 product's throughput over the f32 one's (above 1: f16 faster)."""
    cells = []
    for c in cols:
        lo, hi = f32_row["tflops"].get(c), f16_row["tflops"].get(c)
        cells.append(f"{hi / lo:>12.2f}x" if lo and hi else f"{'-':>13}")
    return " ".join(cells)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=DEFAULT, help="N or MxKxN[:ta][:tb], comma separated")
    p.add_argument(
        "--tiles",
        default="auto",
        help="WebGPU tiles: auto, t16..t128, r128, ...; /kN splits K in N parts (r128/k8)",
    )
    p.add_argument("--adapter", default=None, help="substring of the adapter name/backend")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--min-sample-ms", type=float, default=50.0)
    p.add_argument("--numpy", action="store_true", help="add the (slow) NumPy baseline")
    p.add_argument(
        "--calls-per-submit", type=int, default=1, help="kernel calls encoded per queue submission"
    )
    p.add_argument(
        "--gpu-time", action="store_true", help="each launch's GPU time from timestamp queries"
    )
    p.add_argument(
        "--dtype", default="f32", help="f32, f16 (shader-f16) or f32,f16: both, and f16's speedup"
    )
    p.add_argument("--out", default="bench/out/matmul.json")
    args = p.parse_args(argv)
    dtypes = args.dtype.split(",")
    if (
        not dtypes
        or any(d not in ("f32", "f16") for d in dtypes)
        or len(set(dtypes)) != len(dtypes)
    ):
        p.error(f"--dtype takes f32, f16 or f32,f16, not {args.dtype!r}")

    dev = WebGPUBackend(adapter=args.adapter)
    tiles = args.tiles.split(",")
    rng = np.random.default_rng(0)
    print(f"adapter: {dev.info.name} ({dev.info.backend}, {dev.info.adapter_type})")
    cols = [f"{w}[{t}]" for t in tiles for w in ("kernel", "op")] + ["numpy", "torch"]
    print(f"{args.dtype} TFLOP/s; ratio = kernel[{tiles[0]}] / torch (in the row's dtype)")
    print(f"{'M x K x N':>18} {'tile':>9} " + " ".join(f"{c:>13}" for c in cols) + " ratio err/bnd")
    results = []
    for shape in parse_shapes(args.sizes):
        rows = {dt: bench_shape(dev, shape, dt, tiles, cols, rng, args) for dt in dtypes}
        results.extend(rows.values())
        if len(rows) == 2:
            print(f"{'':>18} {'f16/f32':>9} " + f16_speedup(rows["f32"], rows["f16"], cols))
    report = {
        "adapter": {
            "name": dev.info.name,
            "vendor": dev.info.vendor,
            "backend": dev.info.backend,
            "type": dev.info.adapter_type,
            "description": dev.info.description,
        },
        "units": "TFLOP/s = 2*M*N*K / median seconds per call",
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
