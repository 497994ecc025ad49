"""Dispatch-overhead benchmark: microseconds per kernel for a chain of tiny eager ops.

Usage::

    PYTHONPATH=src python3 bench/dispatch.py                 # 1000 x (x = x + one), 16 elements
    PYTHONPATH=src python3 bench/dispatch.py --device reference   # the NumPy reference device
    PYTHONPATH=src python3 bench/dispatch.py --profile 2000   # + cProfile of 2,000 Tensor adds

Each sample runs a chain of ``--chain`` dependent elementwise adds on a 16-element f32
tensor (``x = x + one``, ``one`` made once up front, so every step is exactly one
dispatch; the script checks the dispatch counter), then reads ``x`` back once.
Reported per dispatch, median over ``--repeats`` samples after ``--warmup`` chains:

* ``encode_us``: host time to issue the chain (Tensor op, output allocation from the
  pool, bind group, encoding; includes the submits the adapter makes every 512
  dispatches), before the read;
* ``encode_cpu_us``: the CPU time of the issuing thread over the same span: what
  other processes on a shared machine take from it, and the adapter's own threads
  (lavapipe's rasteriser runs the kernels on them), are left out;
* ``total_us``: the same chain up to the read's return, i.e. also the GPU work and
  the one readback; nothing is subtracted.

On the reference device each kernel runs as it is issued (NumPy, on this thread), so
``encode_us`` includes the 16-element add itself (about a microsecond).

The ``raw`` rows repeat this through ``backend.run`` on preallocated views (no Tensor,
no dispatch-table lookups, no allocation), which separates the engine's Python cost
from the backend's. ``--profile N`` then prints where the Tensor path's host time goes:
cProfile over ``N`` more adds, the functions by their own time (the profiler's own cost
inflates every call, so read it as shares, not microseconds). Writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import scellis as sc  # noqa: E402
from scellis.base.dtypes import f32  # noqa: E402
from scellis.devices.base import View, get_device  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402


def chain_tensor(dev, n: int, size: int):
    """Issue ``n`` dependent adds through Tensor ops; returns (issue seconds, issue CPU
    seconds of this thread, read fn)."""
    x = sc.tensor([0.0] * size, device=dev)
    one = sc.tensor([1.0] * size, device=dev)
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(n):
        x = x + one
    return time.perf_counter() - t0, time.thread_time() - c0, x.tolist


def chain_raw(dev, n: int, size: int):
    """The same chain through ``backend.run`` on two preallocated ping-pong buffers."""
    bufs = [dev.alloc(size, f32) for _ in range(3)]
    dev.upload(bufs[0], bytes(4 * size))
    dev.upload(bufs[2], b"\x00\x00\x80\x3f" * size)
    views = [View(b, (size,), (1,), 0, f32) for b in bufs]
    t0, c0 = time.perf_counter(), time.thread_time()
    for i in range(n):
        dev.run("add", [views[i % 2], views[2]], [views[(i + 1) % 2]], {})
    last = bufs[n % 2]
    return time.perf_counter() - t0, time.thread_time() - c0, lambda: run_sync(dev.read(last))


def _kernels_run(dev) -> int:
    """Kernels the device has run so far (the reference device counts through its
    profile list, which it fills while one is set)."""
    if hasattr(dev, "stats"):
        return dev.stats["dispatches"]
    return len(dev.host_times)


def measure(dev, chain, n: int, size: int, warmup: int, repeats: int) -> dict:
    for _ in range(warmup):
        chain(dev, n, size)[-1]()
    encode, encode_cpu, total, per_chain = [], [], [], []
    for _ in range(repeats):
        if hasattr(dev, "sync"):
            dev.sync()
        before = _kernels_run(dev)
        t0 = time.perf_counter()
        issue_s, issue_cpu_s, read = chain(dev, n, size)
        read()
        total.append(time.perf_counter() - t0)
        encode.append(issue_s)
        encode_cpu.append(issue_cpu_s)
        per_chain.append(_kernels_run(dev) - before)
    dispatches = statistics.median(per_chain)
    return {
        "dispatches_per_chain": dispatches,
        "encode_us": statistics.median(encode) / dispatches * 1e6,
        "encode_cpu_us": statistics.median(encode_cpu) / dispatches * 1e6,
        "total_us": statistics.median(total) / dispatches * 1e6,
        "total_ms_per_chain": statistics.median(total) * 1e3,
    }


def profile_tensor(dev, n: int, size: int, top: int = 15) -> None:
    """cProfile over ``n`` Tensor adds (after one warm chain), top functions by own time."""
    chain_tensor(dev, n, size)[-1]()
    x = sc.tensor([0.0] * size, device=dev)
    one = sc.tensor([1.0] * size, device=dev)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        x = x + one
    prof.disable()
    x.tolist()
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chain", type=int, default=1000)
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--adapter", default=None)
    p.add_argument("--device", choices=("webgpu", "reference"), default="webgpu")
    p.add_argument("--out", default="bench/out/dispatch.json")
    p.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="then profile N Tensor adds (cProfile, by own time)",
    )
    args = p.parse_args(argv)
    if args.device == "reference":
        dev = get_device("reference")
        dev.host_times = []  # the kernel count (each entry's timing costs ~0.1 us)
    else:
        dev = WebGPUBackend(adapter=args.adapter)
        print(f"adapter: {dev.info.name} ({dev.info.backend}, {dev.info.adapter_type})")
    rows = {}
    for name, chain in (("tensor", chain_tensor), ("raw", chain_raw)):
        rows[name] = measure(dev, chain, args.chain, args.size, args.warmup, args.repeats)
        r = rows[name]
        print(
            f"{name:>7}: {r['dispatches_per_chain']:.0f} dispatches/chain, "
            f"encode {r['encode_us']:.1f} us/dispatch (this thread's CPU "
            f"{r['encode_cpu_us']:.1f}), total {r['total_us']:.1f} us/dispatch "
            f"({r['total_ms_per_chain']:.1f} ms/chain)",
            flush=True,
        )
    if rows["tensor"]["dispatches_per_chain"] != args.chain:
        print("warning: the Tensor chain did not make exactly one dispatch per add")
    if args.profile:
        profile_tensor(dev, args.profile, args.size)
    info = getattr(dev, "info", None)
    report = {
        "device": args.device,
        "adapter": info
        and {
            "name": info.name,
            "backend": info.backend,
            "type": info.adapter_type,
            "description": info.description,
        },
        "method": __doc__.split("Each sample", 1)[1].strip(),
        "args": vars(args),
        "results": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
