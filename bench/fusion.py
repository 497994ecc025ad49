"""Fusion benchmark: dispatches and time per inference forward, eager vs compiled + fused.

Usage::

    PYTHONPATH=src python3 bench/fusion.py                  # both examples, record batch
    PYTHONPATH=src python3 bench/fusion.py --batch 4 --repeats 5 --out fusion.json

For each example model: the dispatches of one eager forward (counted by the WebGPU
backend), of the compiled forward without fusion (the same kernels, replayed from the
kernel graph) and with fusion (elementwise chains and matmul epilogues as single
kernels, ``fast`` tier); the median wall time per forward of each (from issuing the
first dispatch to the output read back, pipelines already compiled); and the largest
difference of the fused output from the eager one. Also the dispatches the kernel
graph predicts for the webgpu-spec limits, which is what ``scellis compile`` prints.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import scellis as sc  # noqa: E402
from scellis.autograd import no_grad  # noqa: E402
from scellis.base.rng import Generator  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.ir.compiled import compile_forward  # noqa: E402
from scellis.ir.limits import of_backend  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.model.build import RecordModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("lstm_forecaster", "char_transformer")


def _inputs(record, batch, dev):
    rng = np.random.default_rng(0)
    out = []
    for spec in record["inputs"].values():
        shape = [batch if isinstance(d, str) else d for d in spec["shape"]]
        if spec["dtype"] == "i32":
            arr = rng.integers(0, 88, size=shape).astype(np.int32)
        else:
            arr = rng.standard_normal(shape).astype(np.float32)
        out.append(sc.tensor(arr, dtype=spec["dtype"], device=dev))
    return out


def _time(fn, repeats: int) -> tuple[float, np.ndarray]:
    fn()  # compile pipelines, fill the pool
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = np.array(fn().tolist())
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench(name: str, batch: int | None, repeats: int) -> dict:
    record = load_record(str(ROOT / "examples" / f"{name}.sml"))
    dev = get_device("webgpu")
    b = batch or int(record.get("batch_size", 32))
    model = RecordModel(record, device=dev, gen=Generator(0, "init")).eval()
    xs = _inputs(record, b, dev)
    fused = compile_forward(record, of_backend(dev), batch=b)
    plain = compile_forward(record, of_backend(dev), batch=b, fused=False)
    row = {"model": name, "batch": b}
    with no_grad():
        for label, fn in (
            ("eager", lambda: model(*xs)),
            ("compiled", lambda: plain.run(model, *xs)),
            ("fused", lambda: fused.run(model, *xs)),
        ):
            before = dev.stats["dispatches"]
            fn()
            row[f"{label}_dispatches"] = dev.stats["dispatches"] - before
            row[f"{label}_ms"], out = _time(fn, repeats)
            row[f"{label}_ms"] *= 1e3
            row[f"_{label}_out"] = out
    row["fused_max_abs_diff"] = float(np.abs(row["_fused_out"] - row["_eager_out"]).max())
    row["output_max_abs"] = float(np.abs(row["_eager_out"]).max())
    for k in [k for k in row if k.startswith("_")]:
        del row[k]
    row["fused_kernels"] = sum(1 for k in fused.kernels.kernels if k.fused)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = [bench(m, args.batch, args.repeats) for m in MODELS]
    info = get_device("webgpu").info
    print(f"adapter: {info.name} ({info.backend})")
    print(f"{'model':<18}{'batch':>6}{'eager':>8}{'fused':>8}{'eager ms':>10}{'fused ms':>10}"
          f"{'max |diff|':>12}")  # fmt: skip
    for r in rows:
        print(
            f"{r['model']:<18}{r['batch']:>6}{r['eager_dispatches']:>8}"
            f"{r['fused_dispatches']:>8}{r['eager_ms']:>10.2f}{r['fused_ms']:>10.2f}"
            f"{r['fused_max_abs_diff']:>12.3g}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"adapter": info.name, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
