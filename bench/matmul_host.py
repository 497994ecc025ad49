"""Host cost of one eager matmul on WebGPU: microseconds of the calling thread per call.

Usage::

    PYTHONPATH=src python3 bench/matmul_host.py               # lavapipe-sized products
    PYTHONPATH=src python3 bench/matmul_host.py --calls 50 --repeats 21

What the op costs the host, apart from the GPU's work: every figure is CPU time of the
thread that issues the calls (``time.thread_time``), so neither the GPU (lavapipe runs
on threads of its own) nor other processes on a shared machine count. A sample issues
``--calls`` calls without waiting (fewer than the 512 dispatches that force a
submission), then waits for the queue outside the timing; the figure is the median over
``--repeats`` samples. Rows are the weight-gradient layout (``:ta``, dW = X^T dY, A a
transposed view) on the kernel the size picks, and with the K split forced (``r64/k4``:
the two launches the 384x8192x384 weight gradient takes on a large GPU). Columns:

* ``op``: ``apply("matmul", ...)``, the whole eager op (shape rule, output allocation,
  tape, kernel choice and encoding, launches);
* ``run``: the backend's part (``backend.run``: encode + launch);
* ``encode``: building the launches (``backend.encode``);
* ``launch``: launching already encoded kernels again (what ``bench/matmul.py`` calls
  the kernel figure: pipeline, meta buffer, bind group, dispatch).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.devices.base import get_device  # noqa: E402
from scellis.runtime.dispatch import apply  # noqa: E402

CASES = {"64x1024x64:ta": {}, "64x1024x64:ta r64/k4": {"_tile": "r64", "_split": 4}}


def per_call_us(dev, fn, wait, calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        wait()
        t0 = time.thread_time()
        for _ in range(calls):
            fn()
        samples.append((time.thread_time() - t0) / calls * 1e6)
    wait()
    return statistics.median(samples)


def measure(dev, attrs: dict, calls: int, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    m, k, n = 64, 1024, 64
    a = sc.tensor(rng.standard_normal((k, m)).astype(np.float32), device=dev).mT
    b = sc.tensor(rng.standard_normal((k, n)).astype(np.float32), device=dev)
    y = apply("matmul", (a, b), **attrs)
    ins, outs = [a.device_view, b.device_view], [y.device_view]
    launches = dev.encode("matmul", ins, outs, attrs)

    def wait():  # the queue drained: a read of the output waits for all work before it
        dev.sync()
        y.tolist()

    def relaunch():
        for src, grid in launches:
            dev.launch(src, grid)

    parts = {
        "op": lambda: apply("matmul", (a, b), **attrs),
        "run": lambda: dev.run("matmul", ins, outs, attrs),
        "encode": lambda: dev.encode("matmul", ins, outs, attrs),
        "launch": relaunch,
    }
    return {name: per_call_us(dev, fn, wait, calls, repeats) for name, fn in parts.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50, help="calls per sample")
    ap.add_argument("--repeats", type=int, default=15, help="samples per figure")
    args = ap.parse_args()
    dev = get_device("webgpu")
    print(f"adapter: {dev.info.name}; host us per call (thread CPU time), median of "
          f"{args.repeats} samples of {args.calls} calls")  # fmt: skip
    print(f"{'case':22} {'op':>7} {'run':>7} {'encode':>7} {'launch':>7}")
    for name, attrs in CASES.items():
        r = measure(dev, attrs, args.calls, args.repeats)
        print(f"{name:22} {r['op']:7.1f} {r['run']:7.1f} {r['encode']:7.1f} {r['launch']:7.1f}")


if __name__ == "__main__":
    main()
