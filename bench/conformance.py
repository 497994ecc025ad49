"""Tier conformance table: speed and divergence of debug, prod and fast per example record.

Usage::

    PYTHONPATH=src python3 bench/conformance.py                      # WebGPU, the examples
    PYTHONPATH=src python3 bench/conformance.py --steps 12 --eval-every 4 --out tiers.json

For each record of the corpus (the example records, their own bundled data): train
``--steps`` steps from the same seed under each tier on the device, validating every
``--eval-every`` steps (0: never) on the first ``--val-rows`` validation rows; the three
tiers take turns, ``--rounds`` times, so that a shared machine's load falls on each of
them alike. Reported per tier: the median steady training step over every round (steps
after the first three, which run eagerly while the schedule records), in wall time and
in the process's CPU time (on lavapipe the kernels run on this process's threads, so
CPU time counts their work whatever else loads the machine), the dispatches of one
replayed step ("eager": the record's steps cannot replay), the median validation pass,
the first round's wall time, and the largest gap from ``debug`` (losses at their own
scale, weights at the model's largest weight, ``train.determinism.worst_gap``); and prod
and fast on WebGPU against the reference device, beside the declared bound of the
record's op family. Then the step time ratios prod/debug and fast/prod per record.
``bench/dispatch_census.py`` lists the launches behind the dispatch counts, by op.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from scellis.devices import get_device  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.run.conformance import load_dataset, train_steps  # noqa: E402
from scellis.train.determinism import TIERS, tolerance_for, worst_gap  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ["lstm_forecaster", "tcn_forecaster", "char_transformer"]


def _gaps(got, want) -> tuple[float, float]:
    losses = worst_gap({"l": got.losses}, {"l": want.losses})
    return losses, worst_gap(got.weights, want.weights, shared_scale=True)


def _rounds(record, dev, a, kw) -> tuple[dict, dict, dict]:
    """(each tier's first outcome, each tier's steady step wall and CPU times over
    every round)."""
    first, wall, cpu = {}, {t: [] for t in TIERS}, {t: [] for t in TIERS}
    for _ in range(a.rounds):
        for t in TIERS:
            o = asyncio.run(train_steps(record, dev, t, a.steps, **kw))
            first.setdefault(t, o)
            wall[t] += o.step_seconds[3:]
            cpu[t] += o.step_cpu_seconds[3:]
    return first, wall, cpu


def measure(name: str, dev, a) -> list[dict]:
    record = load_record(str(ROOT / "examples" / f"{name}.sml"))
    ds = load_dataset(record, ROOT / "examples")
    kw = dict(dataset=ds, eval_every=a.eval_every or None, val_rows=a.val_rows)
    outs, steps, cpu = _rounds(record, dev, a, kw)
    ref = asyncio.run(train_steps(record, "reference", "prod", a.steps, **kw))
    tol = tolerance_for(record)
    rows = []
    for t, o in outs.items():
        lg, wg = _gaps(o, outs["debug"])
        row = {"record": name, "tier": t, "step_ms": 1e3 * statistics.median(steps[t]),
               "step_cpu_ms": 1e3 * statistics.median(cpu[t]), "dispatches": o.dispatches,
               "eval_ms": 1e3 * statistics.median(o.eval_seconds) if o.eval_seconds else None,
               "run_s": sum(o.step_seconds) + sum(o.eval_seconds),
               "loss_gap_vs_debug": lg, "weight_gap_vs_debug": wg}  # fmt: skip
        if t != "debug":
            row["loss_gap_vs_reference"], row["weight_gap_vs_reference"] = _gaps(o, ref)
            row["declared"] = tol
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| record | tier | step ms | step CPU ms | dispatches / step | validation pass ms "
           "| run s | vs debug: loss, weights | vs reference: loss, weights (declared rtol) |",
           "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        ref = ""
        if "declared" in r:
            d = r["declared"]
            ref = (f"{r['loss_gap_vs_reference']:.1e}, {r['weight_gap_vs_reference']:.1e} "
                   f"({d['family']} {d['rtol']:g})")  # fmt: skip
        ev = f"{r['eval_ms']:.2f}" if r["eval_ms"] is not None else "-"
        disp = r["dispatches"] if r["dispatches"] is not None else "eager"
        out.append(f"| {r['record']} | {r['tier']} | {r['step_ms']:.2f} | "
                   f"{r['step_cpu_ms']:.2f} | {disp} | "
                   f"{ev} | {r['run_s']:.2f} | {r['loss_gap_vs_debug']:.1e}, "
                   f"{r['weight_gap_vs_debug']:.1e} | {ref} |")  # fmt: skip
    return "\n".join(out)


def ratios(rows: list[dict]) -> str:
    """Step time ratios per record, wall and CPU: prod / debug and fast / prod."""
    out = ["| record | prod / debug (wall, CPU) | fast / prod (wall, CPU) |", "|---|---|---|"]
    by = {(r["record"], r["tier"]): (r["step_ms"], r["step_cpu_ms"]) for r in rows}
    for name in dict.fromkeys(r["record"] for r in rows):
        d, p, f = (by[(name, t)] for t in TIERS)
        out.append(f"| {name} | {p[0] / d[0]:.2f}, {p[1] / d[1]:.2f} "
                   f"| {f[0] / p[0]:.2f}, {f[1] / p[1]:.2f} |")  # fmt: skip
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", default=",".join(CORPUS))
    p.add_argument("--device", default="webgpu")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--eval-every", type=int, default=4)
    p.add_argument("--val-rows", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3, help="turns each tier takes")
    p.add_argument("--out")
    a = p.parse_args(argv)
    dev = get_device(a.device)
    rows = [r for name in a.records.split(",") for r in measure(name, dev, a)]
    print(table(rows))
    print()
    print(ratios(rows))
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
