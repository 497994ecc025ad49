"""The reference device beside torch CPU on the torch-style tutorial scripts, one thread each.

Each model is a script in ``tests/torchlike/scripts/`` written for torch: an MLP with
DataLoader, AdamW and StepLR (``mlp_adamw``); an LSTM forecaster with clipping
(``lstm_forecast``); a character LM with hand-written causal attention
(``char_attention``) and a classifier over TransformerEncoderLayer (``encoder_layer``);
a Conv1d / BatchNorm / GRU classifier (``conv_gru``). Each runs as written with torch
and with scellis behind its imports on the reference device (the differential suite's
swap), from the same weights, in the same process.

Method: torch gets ``torch.set_num_threads(1)``; NumPy's BLAS is held to one thread by
``OMP_NUM_THREADS``/``MKL_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` = 1, set before NumPy
loads. One warm-up call of the script's ``train`` each, then ``--repeats`` timed calls
alternating the two libraries; a call's time over the number of training steps it made is the
ms per step (the script's whole loop: data, forward, backward, optimizer, ``.item()``);
the median is reported, of the wall time and of the calling thread's CPU time (which
leaves out what other processes on a shared machine take; both libraries compute on
the calling thread here). ``ratio`` = scellis / torch. ``agree``: both libraries' losses
match within the differential suite's tolerance (rtol 1e-4, atol 2e-5).

    PYTHONPATH=src python3 bench/reference_cpu.py --out bench/out/reference_cpu.json

``--ops`` adds, per model, where the reference device's time went in one more call of
the script: the share of the step spent inside the backend (``host_times``: each
kernel with its input windows and result buffer) and the ops that took most of it;
the rest of the step is Python above the device (dispatch, the tape, views, the
blocks' and the script's own code).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy loads: its BLAS reads them once

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import scellis  # noqa: E402
from scellis.devices import get_device  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "torchlike"))
from swapped import load_script  # noqa: E402 - the differential suite's loader

MODELS = {  # script: training steps asked for per call
    "mlp_adamw": 12,
    "lstm_forecast": 8,
    "char_attention": 10,
    "encoder_layer": 10,
    "conv_gru": 10,
}
# script: the training steps a call made, from the losses its ``train`` returns (each
# script appends its own evaluations; the LSTM's early stopping may end it sooner)
STEPS_MADE = {
    "mlp_adamw": lambda losses: len(losses) - 1,
    "lstm_forecast": lambda losses: (len(losses) - 1) // 2,
    "char_attention": lambda losses: len(losses) - 1,
    "encoder_layer": len,
    "conv_gru": lambda losses: len(losses) - 2,
}


def data(name: str) -> dict:
    """The differential suite's inputs, made bigger where a step would be only overhead."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    t = np.sin(np.linspace(0, 24, 80)).astype(np.float32) + 0.1 * rng.standard_normal(80)
    labels = np.arange(16) % (4 if name == "encoder_layer" else 3)
    return {
        "x": x,
        "y": (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5).astype(np.int64),
        "series": t.astype(np.float32),
        "tokens": rng.integers(0, 11, 256).astype(np.int64),
        "seq": rng.standard_normal((16, 8, 3)).astype(np.float32),
        "wave": rng.standard_normal((16, 2, 24)).astype(np.float32),
        "label": labels,
    }


def bench_model(name: str, steps: int, repeats: int, tmp: Path) -> dict:
    theirs_ns, ours_ns = load_script(name, False, "bench"), load_script(name, True, "bench")
    torch.manual_seed(0)
    theirs = theirs_ns["build"]()
    state = {k: v.clone() for k, v in theirs.state_dict().items()}
    inputs = data(name)
    extra = {"path": str(tmp / f"{name}.pt")} if name == "lstm_forecast" else {}

    def run(ns, lib_state):
        model = ns["build"]()
        model.load_state_dict(lib_state)
        t0, c0 = time.perf_counter(), time.thread_time()
        losses = ns["train"](model, inputs, steps, **extra)
        made = STEPS_MADE[name](losses)
        return (time.perf_counter() - t0) / made, (time.thread_time() - c0) / made, losses

    wall = {"torch": [], "scellis": []}
    cpu = {"torch": [], "scellis": []}
    losses = {}
    for k in range(repeats + 1):
        for lib, ns in (("torch", theirs_ns), ("scellis", ours_ns)):
            s, c, losses[lib] = run(ns, state)
            if k:  # the first call warms caches
                wall[lib].append(s * 1e3)
                cpu[lib].append(c * 1e3)
    row = {f"{lib}_ms": statistics.median(wall[lib]) for lib in wall}
    row.update({f"{lib}_cpu_ms": statistics.median(cpu[lib]) for lib in cpu})
    row["ratio"] = row["scellis_ms"] / row["torch_ms"]
    row["cpu_ratio"] = row["scellis_cpu_ms"] / row["torch_cpu_ms"]
    row["agree"] = len(losses["torch"]) == len(losses["scellis"]) and bool(
        np.allclose(losses["scellis"], losses["torch"], rtol=1e-4, atol=2e-5)
    )
    return row


def device_share(name: str, steps: int, tmp: Path, top: int = 6) -> dict:
    """One more call of the script on the reference device with its backend timing each
    op: the share of the step inside the backend and the ops that took most of it."""
    ns, theirs = load_script(name, True, "bench"), load_script(name, False, "bench")
    torch.manual_seed(0)
    model = ns["build"]()
    model.load_state_dict({k: v.clone() for k, v in theirs["build"]().state_dict().items()})
    extra = {"path": str(tmp / f"{name}.pt")} if name == "lstm_forecast" else {}
    dev = get_device("reference")
    dev.host_times = []
    try:
        c0 = time.thread_time()
        made = STEPS_MADE[name](ns["train"](model, data(name), steps, **extra))
        total = (time.thread_time() - c0) / made
        times = dev.host_times
    finally:
        dev.host_times = None
    per_op, calls = collections.defaultdict(float), collections.Counter()
    for op, seconds in times:
        per_op[op] += seconds / made
        calls[op] += 1
    ranked = sorted(per_op.items(), key=lambda kv: -kv[1])[:top]
    return {
        "step_ms": total * 1e3,
        "device_share": sum(per_op.values()) / total,
        "ops_per_step": len(times) / made,
        "top": [(op, ms * 1e3, calls[op] / made) for op, ms in ranked],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="bench/out/reference_cpu.json")
    p.add_argument("--ops", action="store_true", help="also the device's share and top ops")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    scellis.set_default_device("reference")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            r = rows[name] = bench_model(name, MODELS[name], args.repeats, Path(tmp))
            print(
                f"{name:>15}: scellis {r['scellis_ms']:7.2f} ms/step  torch {r['torch_ms']:6.2f}"
                f"  ratio {r['ratio']:5.2f} | thread CPU: scellis {r['scellis_cpu_ms']:7.2f}"
                f"  torch {r['torch_cpu_ms']:6.2f}  ratio {r['cpu_ratio']:5.2f}"
                f" | agree {r['agree']}",
                flush=True,
            )
            if args.ops:
                d = r["ops"] = device_share(name, MODELS[name], Path(tmp))
                top = ", ".join(f"{op} {ms:.2f} ms ({n:.3g}x)" for op, ms, n in d["top"])
                print(
                    f"{'':>15}  in the backend {100 * d['device_share']:.0f}% of"
                    f" {d['step_ms']:.2f} ms, {d['ops_per_step']:.0f} ops/step: {top}",
                    flush=True,
                )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "results": rows}, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
