"""The matrix-unit matmul (kernels/matmul_units.py) through the engine, layout by layout:
each checked against NumPy (err/bound <= 1, bench/matmul.py's rows check) and timed
beside the engine's f16 REGS tiles and torch CUDA (f16 on its tensor cores, f32 with TF32
off), in one run on one GPU.

Usage (a GPU whose Dawn adapter lists subgroup matrices)::

    SCELLIS_MATRIX_UNITS=1 SCELLIS_NATIVE=dawn python3 bench/matmul_units.py --out DIR/units.json

Timing is bench/matmul.py's: the kernel relaunched with its encoded bindings (``kernel``
columns, wall clock per call with ``--calls-per-submit`` calls a submission) and torch's
calls back to back; TFLOP/s = 2*M*N*K / seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
from matmul import bench_webgpu, check_rows, operands, torch_cuda_f32

from scellis.devices import get_device

# (fm, fn, bk): fragments per workgroup (one subgroup), K staged where not direct
LAYOUTS = [(4, 2, 32), (2, 2, 32), (2, 4, 32), (4, 4, 32), (8, 2, 32), (8, 4, 32), (4, 2, 64)]
SIZES = (
    "4096x4096x4096,8192x384x1536,8192x1536x384,384x8192x1152:ta,1152x8192x384:ta:tb,"
    "8200x384x1000"
)  # the last one: edges, staged


def parse(size: str):
    dims, *flags = size.split(":")
    m, k, n = (int(x) for x in dims.split("x"))
    return (m, k, n, "ta" in flags, "tb" in flags)


def torch_tflops(torch, shape, dtype, repeats: int) -> float:
    import time

    m, k, n, _, _ = shape
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    return 2 * m * n * k * repeats / (time.perf_counter() - t0) / 1e12


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=SIZES)
    p.add_argument("--layouts", default="all", help="all, or indices into LAYOUTS")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--min-sample-ms", type=float, default=20)
    p.add_argument("--calls-per-submit", type=int, default=10)
    p.add_argument("--out", default="units.json")
    args = p.parse_args(argv)
    args.gpu_time = False
    dev = get_device("webgpu")
    base = dev.matrix
    configs = dev.info.extra.get("subgroup_matrix_configs")
    print("adapter:", dev.info.name, "| unit:", base)
    print("listed configurations:", configs)
    if base is None:
        print("no matrix unit: device features", dev.info.device_features)
        Path(args.out).write_text(json.dumps({"unit": None, "configs": configs}))
        return 0
    picks = LAYOUTS if args.layouts == "all" else [LAYOUTS[int(i)] for i in args.layouts.split(",")]
    torch = torch_cuda_f32()
    rng = np.random.default_rng(0)
    rows = []
    for size in args.sizes.split(","):
        shape = parse(size)
        a, b, *stored = operands(rng, shape, np.float16)
        row = {"shape": size, "tflops": {}, "err_over_bound": {}}
        flops = 2 * shape[0] * shape[1] * shape[2]
        tiles = [("f16 auto", None), ("f16 r128x64hm", None)]
        tiles += [(f"units {lay}", lay) for lay in picks]
        for name, lay in tiles:
            if lay is not None:
                fm, fn, bk = lay
                dev.matrix = dataclasses.replace(base, fm=fm, fn=fn, bk=bk)
                if not dev.matrix.fits(dev.limits):
                    continue
            tile = "units" if lay else name.split()[1]
            try:
                _, kernel, y = bench_webgpu(dev, stored, shape, tile, args)
            except Exception as e:  # a layout the compiler or the limits refuse
                row["tflops"][name] = str(e)[:200]
                continue
            row["tflops"][name] = flops / kernel["median_s"] / 1e12
            row["err_over_bound"][name] = check_rows(dev, y, a, b)
        dev.matrix = base
        if torch is not None:
            row["tflops"]["torch f16"] = torch_tflops(torch, shape, torch.float16, 20)
            row["tflops"]["torch f32"] = torch_tflops(torch, shape, torch.float32, 10)
        rows.append(row)
        shown = {k: round(v, 1) if isinstance(v, float) else v for k, v in row["tflops"].items()}
        print(size, json.dumps(shown))
        worst = max(row["err_over_bound"].values(), default=0)
        print(
            f"  worst err/bound {worst:.3f}",
            {k: round(v, 3) for k, v in row["err_over_bound"].items()},
        )
    report = {"unit": str(base), "configs": configs, "rows": rows}
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
