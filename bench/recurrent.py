"""One recurrent layer's forward + backward: Scellis per kernel variant vs torch CUDA (cuDNN).

Usage::

    PYTHONPATH=src python3 bench/recurrent.py --small                 # lavapipe smoke check
    PYTHONPATH=src python3 bench/recurrent.py --out bench/out/recurrent.json   # on a GPU

Rows: LSTM and GRU, batch 128, 64 steps, input width = hidden, hidden 256 (the main
row) and 64 / 512. Each Scellis variant (``SCELLIS_RECURRENT_VARIANT``: the kernels are
built with the variable set, so one process compares them all) gives two figures:

- ``layer``: the whole layer through autograd: the input projection (one matmul), the
  fused op, its backward op and the weight-gradient matmuls, with grads for x, W_ih,
  W_hh, the bias and h0 (and c0), host work of the op layer included;
- ``kernels``: the fused op's and its backward's encoded launches re-dispatched (same
  pipelines, bindings and meta), the recurrence alone, as a replayed step runs it.

torch: ``nn.LSTM`` / ``nn.GRU`` (cuDNN), f32 with TF32 off, forward + backward of the
same layer and loss. ``ratio`` = the variant's ``layer`` / torch.

Method (bench/matmul.py's): ``--warmup`` untimed calls (pipeline compiles, pool fill,
cuDNN plans), then ``--repeats`` samples of ``inner`` back-to-back calls, ``inner`` chosen
so a sample lasts >= ``--min-sample-ms``; every sample starts with the queue drained and
ends with a 4-byte readback of the last result (torch: ``cuda.synchronize``); reported:
the median ms per call. Each variant's kernels are checked against the ``step``
variant's on the same inputs (``err`` = max |diff| / max |step|, over the packed
forward result and the backward's flat result; it must stay under 1e-3).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from matmul import time_samples, torch_cuda_f32  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.base.dtypes import as_dtype  # noqa: E402
from scellis.devices.base import View  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.devices.webgpu.kernels.recurrent import VARIANT_ENV, VARIANTS  # noqa: E402
from scellis.runtime.tensor import run_sync  # noqa: E402

GATES = {"lstm": 4, "gru": 3}
MAX_ERR = {"f32": 1e-3, "f16": 2e-2}  # f16: each stored value rounds to 11 bits


class Layer:
    """One layer's tensors on ``dev``: weights, input, initial state, loss weights."""

    def __init__(
        self, dev, kind: str, batch: int, steps: int, hidden: int, dtype="f32", seed: int = 0
    ):
        rng = np.random.default_rng(seed)
        g, s = GATES[kind], 1.0 / np.sqrt(hidden)
        self.kind, self.dev, self.hidden, self.dtype = kind, dev, hidden, dtype
        self.host = {
            "x": rng.standard_normal((batch, steps, hidden)),
            "wih": rng.uniform(-s, s, (g * hidden, hidden)),
            "whh": rng.uniform(-s, s, (g * hidden, hidden)),
            "bih": rng.uniform(-s, s, g * hidden),
            "bhh": rng.uniform(-s, s, g * hidden),
            "h0": rng.standard_normal((batch, hidden)) * 0.5,
            "c0": rng.standard_normal((batch, hidden)) * 0.5,
            "r": rng.standard_normal((batch, steps, hidden)),
        }
        self.host = {k: v.astype(np.float32) for k, v in self.host.items()}
        self.t = {
            k: sc.tensor(v, device=dev, dtype=dtype, requires_grad=k != "r")
            for k, v in self.host.items()
        }

    def forward_backward(self):
        """The layer's loss (seq * r).sum() and its backward; returns W_hh's gradient."""
        t, h = self.t, self.hidden
        if self.kind == "lstm":
            gx = t["x"] @ t["wih"].mT + (t["bih"] + t["bhh"])
            y = gx.prim("lstm_seq", t["h0"], t["c0"], t["whh"])
        else:
            gx = t["x"] @ t["wih"].mT + t["bih"]
            y = gx.prim("gru_seq", t["h0"], t["whh"], t["bhh"])
        seq = y[:, :, 0:h].permute(1, 0, 2)
        (seq * t["r"]).sum().backward()
        return t["whh"].grad


def read4(dev, view) -> None:
    run_sync(dev.gpu.read_buffer(view.buf.handle.chunks[0], 0, 4))


def bench_layer(dev, layer: Layer, args) -> dict:
    last = {}

    def call():
        for v in layer.t.values():
            v.grad = None
        last["g"] = layer.forward_backward()
        dev.gpu.flush()

    def sync():
        g = last.get("g")
        dev.sync() if g is None else read4(dev, g.device_view)

    return time_samples(call, sync, args.warmup, args.repeats, args.min_sample_ms / 1e3)


class Kernels:
    """The fused op and its backward as encoded launches over fixed buffers."""

    def __init__(self, dev, layer: Layer):
        t, h, k = layer.t, layer.hidden, layer.kind
        b, steps, _ = layer.host["x"].shape
        g = GATES[k]
        rng = np.random.default_rng(1)
        dt = layer.dtype
        gx = sc.tensor(rng.standard_normal((b, steps, g * h)), device=dev, dtype=dt)
        state = [t["h0"]] + ([t["c0"]] if k == "lstm" else [])
        extra = [t["whh"]] + ([t["bhh"]] if k == "gru" else [])
        fwd_in = [gx, *state, *extra]
        self.y = gx.prim(f"{k}_seq", *[v.detach() for v in fwd_in[1:]])
        self.gy = sc.tensor(rng.standard_normal(self.y.shape), device=dev, dtype=dt)
        flat = dev.alloc(steps * b * 4 * h + (4 if k == "lstm" else 2) * b * h, as_dtype(dt))
        self.flat = View(flat, (flat.numel,), (1,), 0, as_dtype(dt))
        self.np_dtype = np.float16 if dt == "f16" else np.float32
        self.keep = (gx, flat)
        self.dev, self.kind = dev, k
        self.fwd = ([v.device_view for v in fwd_in], [self.y.device_view])
        state_b = t["c0"] if k == "lstm" else t["h0"]
        bwd_in = [self.gy, self.y, state_b, t["whh"]]
        self.bwd = ([v.device_view for v in bwd_in], [self.flat])

    def launches(self) -> list:
        f = self.dev.encode(f"{self.kind}_seq", *self.fwd, {})
        b = self.dev.encode(f"{self.kind}_seq_backward", *self.bwd, {})
        return f + b

    def results(self) -> np.ndarray:
        y = np.frombuffer(run_sync(self.dev.read(self.y.device_view.buf)), self.np_dtype)
        o = np.frombuffer(run_sync(self.dev.read(self.flat.buf)), self.np_dtype)
        return np.concatenate([y[: self.y.numel], o[: self.flat.shape[0]]]).astype(np.float64)

    def bench(self, args) -> tuple[dict, np.ndarray]:
        launches = self.launches()

        def call():
            for src, grid in launches:
                self.dev.launch(src, grid)
            self.dev.gpu.flush()

        stats = time_samples(
            call, lambda: read4(self.dev, self.flat), args.warmup, args.repeats,
            args.min_sample_ms / 1e3,
        )  # fmt: skip
        call()
        return stats, self.results()


def bench_torch(kind: str, host: dict, args) -> dict | None:
    torch = torch_cuda_f32()
    if torch is None:
        return None
    h = host["whh"].shape[1]
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    layer = cls(h, h, batch_first=True).cuda()
    cuda = {k: torch.from_numpy(v).cuda() for k, v in host.items()}
    x = cuda["x"].requires_grad_(True)
    h0 = cuda["h0"][None].requires_grad_(True)
    c0 = cuda["c0"][None].requires_grad_(True)

    def call():
        layer.zero_grad(set_to_none=True)
        state = (h0, c0) if kind == "lstm" else h0
        seq, _ = layer(x, state)
        (seq * cuda["r"]).sum().backward()

    return time_samples(
        call, torch.cuda.synchronize, args.warmup, args.repeats, args.min_sample_ms / 1e3
    )


def run_row(dev, kind: str, hidden: int, args) -> dict:
    layer = Layer(dev, kind, args.batch, args.steps, hidden, args.dtype)
    kernels = Kernels(dev, layer)
    row = {"kind": kind, "hidden": hidden, "batch": args.batch, "steps": args.steps,
           "dtype": args.dtype}  # fmt: skip
    row["layer_ms"], row["kernels_ms"], row["err"] = {}, {}, {}
    before = os.environ.get(VARIANT_ENV)
    base = None
    try:
        for v in ["step"] + [x for x in args.variants if x != "step"]:
            os.environ[VARIANT_ENV] = v
            stats, got = kernels.bench(args)
            if base is None:
                base = got
            row["err"][v] = float(np.max(np.abs(got - base)) / max(np.max(np.abs(base)), 1e-30))
            if v not in args.variants:
                continue  # the step variant ran only as the others' check
            row["kernels_ms"][v] = stats["median_s"] * 1e3
            row["layer_ms"][v] = bench_layer(dev, layer, args)["median_s"] * 1e3
    finally:
        if before is None:
            os.environ.pop(VARIANT_ENV, None)
        else:
            os.environ[VARIANT_ENV] = before
    torch_stats = bench_torch(kind, layer.host, args)
    row["torch_ms"] = torch_stats["median_s"] * 1e3 if torch_stats else None
    return row


def print_row(row: dict, variants: list[str]) -> None:
    torch_ms = row["torch_ms"]
    for v in variants:
        lay, ker = row["layer_ms"][v], row["kernels_ms"][v]
        ratio = f"{lay / torch_ms:8.2f}" if torch_ms else f"{'-':>8}"
        tms = f"{torch_ms:9.3f}" if torch_ms else f"{'-':>9}"
        print(
            f"{row['kind']:>5} {row['hidden']:>6} {v:>10} {lay:10.3f} {ker:10.3f} {tms} "
            f"{ratio} {row['err'][v]:9.2e}",
            flush=True,
        )


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="tiny sizes for lavapipe")
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma separated")
    p.add_argument("--kinds", default="lstm,gru")
    p.add_argument("--hidden", default="256,64,512", help="hidden sizes, comma separated")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--adapter", default=None, help="substring of the adapter name/backend")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--min-sample-ms", type=float, default=50.0)
    p.add_argument(
        "--dtype",
        default="f32",
        choices=("f32", "f16"),
        help="Scellis's storage dtype (f16: mixed precision's kernels; torch stays f32)",
    )
    p.add_argument("--out", default="bench/out/recurrent.json")
    args = p.parse_args(argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [v for v in args.variants if v not in VARIANTS]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if bad or not args.variants or any(k not in GATES for k in kinds):
        p.error(f"variants are {', '.join(VARIANTS)}; kinds are lstm, gru")
    args.kinds = kinds
    try:
        args.hidden = [int(h) for h in args.hidden.split(",")]
    except ValueError:
        p.error("--hidden takes integers, comma separated")
    if args.small:
        args.hidden, args.batch, args.steps = [16, 9], 4, 4
        args.warmup, args.repeats, args.min_sample_ms = 1, 3, 1.0
    return args


def main(argv=None) -> int:
    args = parse(argv)
    dev = WebGPUBackend(adapter=args.adapter)
    print(f"adapter: {dev.info.name} ({dev.info.backend}, {dev.info.adapter_type})")
    print(f"batch {args.batch}, {args.steps} steps, {args.dtype}; median ms per forward + backward")
    print(
        f"{'kind':>5} {'hidden':>6} {'variant':>10} {'layer':>10} {'kernels':>10} "
        f"{'torch':>9} {'ratio':>8} {'err':>9}"
    )
    rows = []
    for kind in args.kinds:
        for hidden in args.hidden:
            row = run_row(dev, kind, hidden, args)
            print_row(row, args.variants)
            rows.append(row)
    report = {
        "adapter": {"name": dev.info.name, "backend": dev.info.backend},
        "units": "median ms per forward + backward of one layer",
        "method": __doc__.split("Method", 1)[1].strip(),
        "args": {k: v for k, v in vars(args).items()},
        "results": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    worst = max(e for r in rows for e in r["err"].values())
    return 0 if worst <= MAX_ERR[args.dtype] else 1


if __name__ == "__main__":
    sys.exit(main())
