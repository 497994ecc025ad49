"""Quantised-weight matmul throughput: qmatmul (int8, NF4) against the f32 matmul on WebGPU.

Usage::

    PYTHONPATH=src python3 bench/qmatmul.py                                 # a GPU
    PYTHONPATH=src python3 bench/qmatmul.py --size 512 --tokens 256 --repeats 2   # lavapipe

A dense layer's weight W [size, size] (a 4096 x 4096 projection by default) meets
``--tokens`` rows (batch x sequence; default 4096 and 16384): the forward product
x @ W^T and the input's gradient dy @ W (``:t``). Per product: the f32 ``matmul`` with W
stored in f32 (the same view of it, no copy), and ``qmatmul`` with W stored as NF4 and
int8 codes, each in two kernels forced with ``_tile``: the ``TILES`` tile the shape
gets (t128, t64...: one element decoded at a time; what qmatmul ran before) and the
``REGS`` tile it gets now (r128, r64...: the register-tiled kernel with whole words
decoded in its load stage; r64 where the product is too small to choose one). Timing is
``bench/matmul.py``'s (warm-up, samples of back-to-back ops, a 4-byte readback to
sync). TFLOP/s = 2 M N K / median; ``vs f32`` = f32 time / this time (above 1: faster
than the f32 matmul). Each result is checked on 16 rows against an f64 product of the
dequantised W with the matmul bound plus one rounding (``err/bound`` <= 1).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from matmul import time_samples

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.base.quant import QuantSpec  # noqa: E402
from scellis.devices.reference.quant import dequantize  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.devices.webgpu.kernels.matmul import choose_reg, choose_tile  # noqa: E402
from scellis.runtime.dispatch import apply  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402


def timed(dev, make, args) -> tuple[float, object]:
    last = {}

    def op():
        last["y"] = make()
        dev.gpu.flush()

    def sync():
        y = last.get("y")
        if y is None:
            return dev.sync()
        run_sync(dev.gpu.read_buffer(y.device_view.buf.handle.chunks[0], 0, 4))

    stats = time_samples(op, sync, args.warmup, args.repeats, args.min_sample_ms / 1e3)
    return stats["median_s"], last["y"]


def err_ratio(y, x, w, trans: bool) -> float:
    """max |y - x @ B| / bound over the first 16 rows, B = W or W^T in f64."""
    rows = np.asarray(y[:16].tolist(), np.float64)
    b = w.astype(np.float64) if trans else w.astype(np.float64).T
    xs = x[:16].astype(np.float64)
    bound = (x.shape[1] + 1) * 2.0**-23 * (np.abs(xs) @ np.abs(b))
    return float((np.abs(rows - xs @ b) / np.maximum(bound, 1e-30)).max())


def product(dev, size: int, tokens: int, trans: bool, args) -> None:
    rng = np.random.default_rng(tokens + trans)
    w = rng.standard_normal((size, size), dtype=np.float32)
    x = rng.standard_normal((tokens, size), dtype=np.float32)
    tx, tw = sc.tensor(x, device=dev), sc.tensor(w, device=dev)
    name = f"{tokens}x{size}x{size}" + (":t" if trans else "")
    flops = 2.0 * tokens * size * size
    f32_s, y = timed(dev, lambda: apply("matmul", (tx, tw if trans else tw.mT)), args)
    print(f"| {name} | f32 matmul | | {f32_s * 1e3:.2f} | {flops / f32_s / 1e12:.3g} | 1.00 "
          f"| {err_ratio(y, x, w, trans):.3f} |")  # fmt: skip
    small = choose_tile(tokens, size, 1, dev.limits)
    reg = choose_reg(tokens, size, size, 1, dev.limits) or "r64"  # forced where too small
    for fmt in ("nf4", "int8"):
        spec = QuantSpec(fmt, size, size)
        codes, scales = tw.quantized(**spec.attrs())
        deq = dequantize(np.asarray(codes.tolist(), np.uint32),
                         np.asarray(scales.tolist(), np.float32), spec)  # fmt: skip
        for kernel, tile in ((small, {"_tile": small}), (reg, {"_tile": reg})):

            def call(tile=tile, spec=spec, codes=codes, scales=scales):
                return apply("qmatmul", (tx, codes, scales), **spec.attrs(), trans=trans, **tile)

            s, y = timed(dev, call, args)
            err = err_ratio(y, x, deq, trans)
            cells = f"{s * 1e3:.2f} | {flops / s / 1e12:.3g} | {f32_s / s:.2f} | {err:.3f}"
            print(f"| {name} | qmatmul {fmt} | {kernel} | {cells} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--tokens", default="4096,16384", help="rows: batch x sequence")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-sample-ms", type=float, default=200.0)
    ap.add_argument("--adapter", default=None, help="substring of the adapter name/backend")
    args = ap.parse_args()
    dev = WebGPUBackend(adapter=args.adapter)
    print(f"adapter: {dev.info.name} ({dev.info.backend}, {dev.info.adapter_type})\n")
    print("| product | op | kernel | ms | TFLOP/s | vs f32 | err/bound |")
    print("|---|---|---|---|---|---|---|")
    for tokens in (int(t) for t in args.tokens.split(",")):
        for trans in (False, True):
            product(dev, args.size, tokens, trans, args)


if __name__ == "__main__":
    main()
