"""Attention benchmark: forward + backward of one call, scellis flash (each kernel variant)
and naive paths on WebGPU vs torch CUDA ``scaled_dot_product_attention`` (f32).

Usage::

    PYTHONPATH=src python3 bench/attention.py --small          # lavapipe smoke check
    PYTHONPATH=src python3 bench/attention.py                  # T = 128 .. 2048, D = 64

A call takes q, k, v [B, H, T, D] (f32 leaves that require grad), computes the attention
output merged back to [B, T, H * D] and back-propagates a fixed random cotangent into
q, k and v. ``flash[V]`` is ``flash_attention`` with kernel variant V; ``naive`` is the
attention block's naive path (``catalog.blocks.attention.attend``: q kᵀ matmul, scale,
causal mask by ``where``, softmax, matmul), the ops ``attention: naive`` runs; ``torch``
is ``F.scaled_dot_product_attention`` on CUDA in f32 with TF32 off (torch picks its
backend: memory-efficient or math). The default shapes keep B * T = 8192 tokens and
H = 6 (B = 32 at T = 256, a d384 6-head Transformer's batch), so the naive path's
score matrix, B * H * T * T floats, stays under 0.4 GiB.

Method (as ``bench/matmul.py``): ``--warmup`` untimed calls, then ``--repeats`` timed
samples of ``inner`` back-to-back calls each (``inner`` chosen so a sample lasts >=
``--min-sample-ms``); a sample starts with the queue drained and ends when the last
call's q gradient is read back (4 bytes; WebGPU's queue runs in order) or
``torch.cuda.synchronize()`` returns. Median ms per call. ``kernel[V]`` re-launches
variant V's encoded forward and backward kernels (same pipelines, bindings and buffers)
back to back, leaving out the Python op layer (the eager calls above include it: a few
tenths of a millisecond of host work per call), which is the figure comparable to torch's
CUDA kernels running ahead of its host; ``--per-kernel`` adds each of those kernels timed
alone (``fwd``, ``dq``, ``dkv``) and torch's forward alone (``torch_fwd``, its inputs
requiring grad as in the full call). Each WebGPU path's output and
gradients are checked against the naive path's (normwise, ``err`` column, relative to the
largest value); over ``--tolerance`` fails the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from matmul import relaunch, time_samples, torch_cuda_f32  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.catalog.blocks.attention import attend  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.devices.webgpu.kernels import attention as flash_kernels  # noqa: E402
from scellis.runtime.creation import arange  # noqa: E402
from scellis.runtime.dispatch import apply  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402

H, D = 6, 64
TOKENS = 8192  # B * T of every default shape
DEFAULT_T = "128,256,512,1024,2048"
SMALL = [(1, 2, 16, 16), (2, 2, 40, 16)]  # (B, H, T, D) for --small


def shapes(args) -> list[tuple[int, int, int, int]]:
    if args.small:
        return SMALL
    return [(max(1, TOKENS // t), H, t, D) for t in (int(x) for x in args.t.split(","))]


def naive_path(q, k, v, causal: bool):
    """The block's naive path (``MultiHeadAttention.forward`` with ``attention: naive``)."""
    t, s = q.shape[2], k.shape[2]

    def keep():
        if not causal:
            return None
        return arange(s, device=q.device).unsqueeze(0) <= arange(t, device=q.device).unsqueeze(-1)

    return attend(q, k, v, keep, 0.0, False)


def flash_path(variant: str):
    def run(q, k, v, causal: bool):
        b, h, t, d = q.shape
        scale = 1.0 / math.sqrt(d)
        y = apply("flash_attention", (q, k, v), causal=causal, scale=scale, _variant=variant)
        return y[..., 0:d].permute(0, 2, 1, 3).reshape(b, t, h * d)

    return run


def bench_webgpu(dev, path, host, causal: bool, args) -> tuple[dict, list]:
    """(timing, [output, dq, dk, dv] of the last call as arrays)."""
    q, k, v = (sc.tensor(x, device=dev, requires_grad=True) for x in host[:3])
    g = sc.tensor(host[3], device=dev)
    last = {}

    def call():
        for t in (q, k, v):
            t.grad = None
        y = path(q, k, v, causal)
        y.backward(g)
        last["y"] = y
        dev.gpu.flush()

    def sync():
        if "y" not in last:
            dev.sync()
            return
        run_sync(dev.gpu.read_buffer(q.grad.device_view.buf.handle.chunks[0], 0, 4))

    stats = time_samples(call, sync, args.warmup, args.repeats, args.min_sample_ms / 1e3)
    arrays = [t.detach().numpy() for t in (last["y"], q.grad, k.grad, v.grad)]
    return stats, arrays


def bench_torch(host, causal: bool, args, backward: bool = True) -> dict | None:
    torch = torch_cuda_f32()
    if torch is None:
        return None
    q, k, v = (torch.from_numpy(x).cuda().requires_grad_() for x in host[:3])
    g = torch.from_numpy(host[3]).cuda()
    b, h, t, d = q.shape

    def call():
        for x in (q, k, v):
            x.grad = None
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if backward:
            y.permute(0, 2, 1, 3).reshape(b, t, h * d).backward(g)

    return time_samples(call, torch.cuda.synchronize, args.warmup, args.repeats,
                        args.min_sample_ms / 1e3)  # fmt: skip


def bench_kernels(dev, host, causal: bool, variant: str, args) -> dict:
    """Median ms of variant's flash forward + backward kernels alone (see ``kernel[V]``):
    ``{"kernel[V]": ms}``, and with ``--per-kernel`` each launch timed alone too
    (``fwd[V]``, then the backward's passes ``dq[V]`` and ``dkv[V]``)."""
    q, k, v = (sc.tensor(x, device=dev) for x in host[:3])
    attrs = {"causal": causal, "scale": 1.0 / math.sqrt(q.shape[-1]), "_variant": variant}
    y = apply("flash_attention", (q, k, v), **attrs)
    gy_host = np.random.default_rng(1).standard_normal(y.shape, dtype=np.float32)
    gy = sc.tensor(gy_host, device=dev)
    grads = apply("flash_attention_backward", (q, k, v, y, gy), **attrs)
    views = lambda ts: [t.device_view for t in ts]  # noqa: E731
    launches = dev.encode("flash_attention", views((q, k, v)), views((y,)), attrs)
    back = views((q, k, v, y, gy))
    launches += dev.encode("flash_attention_backward", back, views((grads,)), attrs)

    def sync():
        run_sync(dev.gpu.read_buffer(grads.device_view.buf.handle.chunks[0], 0, 4))

    def median_ms(group) -> float:
        stats = time_samples(lambda: relaunch(dev, group), sync, args.warmup, args.repeats,
                             args.min_sample_ms / 1e3)  # fmt: skip
        return stats["median_s"] * 1e3

    out = {f"kernel[{variant}]": median_ms(launches)}
    if args.per_kernel:
        names = ["fwd", "dq", "dkv"] if len(launches) == 3 else range(len(launches))
        for name, launch in zip(names, launches):
            out[f"{name}[{variant}]"] = median_ms([launch])
    return out


def normwise(got: list, want: list) -> float:
    return max(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)) for a, b in zip(got, want))


def run_shape(dev, shape, causal: bool, variants, rng, args) -> dict:
    b, h, t, d = shape
    host = [rng.standard_normal((b, h, t, d), dtype=np.float32) for _ in range(3)]
    host.append(rng.standard_normal((b, t, h * d), dtype=np.float32))
    row = {"shape": f"B{b} H{h} T{t} D{d}", "causal": causal, "ms": {}, "err": {}}
    naive_stats, want = bench_webgpu(dev, naive_path, host, causal, args)
    for name in variants:
        stats, got = bench_webgpu(dev, flash_path(name), host, causal, args)
        row["ms"][f"flash[{name}]"] = stats["median_s"] * 1e3
        row["err"][f"flash[{name}]"] = normwise(got, want)
        row["ms"].update(bench_kernels(dev, host, causal, name, args))
    row["ms"]["naive"] = naive_stats["median_s"] * 1e3
    torch_stats = bench_torch(host, causal, args)
    if torch_stats is not None:
        row["ms"]["torch"] = torch_stats["median_s"] * 1e3
    if torch_stats is not None and args.per_kernel:
        row["ms"]["torch_fwd"] = bench_torch(host, causal, args, False)["median_s"] * 1e3
    best = min(row["ms"][f"flash[{n}]"] for n in variants)
    row["best_flash_over_naive"] = best / row["ms"]["naive"]
    best_kernel = min(row["ms"][f"kernel[{n}]"] for n in variants)
    row["best_flash_over_torch"] = best / row["ms"]["torch"] if torch_stats else None
    row["best_kernel_over_torch"] = best_kernel / row["ms"]["torch"] if torch_stats else None
    return row


def print_row(row, cols) -> None:
    cells = " ".join(f"{row['ms'].get(c, float('nan')):>12.3f}" for c in cols)
    to_torch, kernel = row["best_flash_over_torch"], row["best_kernel_over_torch"]
    ratio = (
        f"{row['best_flash_over_naive']:>6.2f} {to_torch:>6.2f} {kernel:>7.2f}"
        if to_torch
        else (f"{row['best_flash_over_naive']:>6.2f}      -       -")
    )
    err = max(row["err"].values())
    print(f"{row['shape']:>20} {'causal' if row['causal'] else 'full':>6} {cells} {ratio} "
          f"{err:.1e}", flush=True)  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="tiny shapes (a lavapipe smoke check)")
    p.add_argument("--t", default=DEFAULT_T, help="sequence lengths, comma separated")
    p.add_argument("--variants", default=",".join(flash_kernels.VARIANTS),
                   help="flash kernel variants, comma separated")  # fmt: skip
    p.add_argument("--adapter", default=None, help="substring of the adapter name/backend")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--min-sample-ms", type=float, default=50.0)
    p.add_argument("--tolerance", type=float, default=1e-4, help="largest normwise error")
    p.add_argument("--per-kernel", action="store_true",
                   help="also time each kernel alone, and torch's forward alone")  # fmt: skip
    p.add_argument("--no-warm-row", action="store_true",
                   help="skip the untimed first row (see below)")  # fmt: skip
    p.add_argument("--out", default="bench/out/attention.json")
    args = p.parse_args(argv)
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in flash_kernels.VARIANTS]
    if unknown:
        print(f"unknown variant(s) {', '.join(unknown)}; choose from "
              f"{', '.join(flash_kernels.VARIANTS)}", file=sys.stderr)  # fmt: skip
        return 2

    dev = WebGPUBackend(adapter=args.adapter)
    rng = np.random.default_rng(0)
    print(f"adapter: {dev.info.name} ({dev.info.backend}, {dev.info.adapter_type})")
    cols = [f"flash[{v}]" for v in variants] + [f"kernel[{v}]" for v in variants]
    if args.per_kernel:
        cols += [f"{k}[{v}]" for v in variants for k in ("fwd", "dq", "dkv")]
    cols += ["naive", "torch"] + (["torch_fwd"] if args.per_kernel else [])
    print("median ms per forward + backward; ratios: best flash / naive, best flash / torch, "
          "best kernel / torch")  # fmt: skip
    head = " ".join(f"{c:>12}" for c in cols)
    print(f"{'shape':>20} {'mask':>6} {head} /naive /torch /torch(k) err")
    if not args.no_warm_row:
        # the first row measured in a process read 2-3x slow on the H200 whichever shape
        # it was (a GPU warmed by 2 s of matmuls did not help): run it once, untimed
        run_shape(dev, shapes(args)[0], False, variants, np.random.default_rng(3), args)
    results = []
    for shape in shapes(args):
        for causal in (False, True):
            row = run_shape(dev, shape, causal, variants, rng, args)
            results.append(row)
            print_row(row, cols)
    report = {
        "adapter": {"name": dev.info.name, "backend": dev.info.backend,
                    "type": dev.info.adapter_type, "description": dev.info.description},
        "limits": dev.limits,
        "default_variant": flash_kernels.VARIANT,
        "units": "median ms per call (forward + backward)",
        "method": __doc__.split("Method", 1)[1].strip(),
        "args": vars(args),
        "results": results,
    }  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0 if all(max(r["err"].values()) <= args.tolerance for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
