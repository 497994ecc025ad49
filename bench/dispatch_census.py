"""Dispatch census of a replayed training step: which kernels one step launches, per tier.

Usage::

    PYTHONPATH=src python3 bench/dispatch_census.py                       # the corpus, prod
    PYTHONPATH=src python3 bench/dispatch_census.py --tiers prod,fast --records char_transformer
    PYTHONPATH=src python3 bench/dispatch_census.py --detail              # every launch in order
    PYTHONPATH=src python3 bench/dispatch_census.py --as-gpu --tiers prod,fast   # a GPU's kernels

Trains each record of the conformance corpus a few steps under each tier on WebGPU,
takes the schedule its replayed steps run, and counts the launches of one step by op
(a primitive may take several launches: a two-level sum, a split matmul). Where the
host cost of a replayed step is its dispatches (a real GPU), these counts are what
the tiers' kernel choices can move. ``--detail`` lists every launch with its shapes,
in step order, to spot chains of small kernels on the same shapes.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import os
import sys
from pathlib import Path

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from scellis.devices import get_device  # noqa: E402
from scellis.devices.webgpu import WebGPUBackend  # noqa: E402
from scellis.devices.webgpu import replay as webgpu_replay  # noqa: E402
from scellis.ir.record import load_record  # noqa: E402
from scellis.run.conformance import load_dataset, train_steps  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ["lstm_forecaster", "tcn_forecaster", "char_transformer"]


def _recorded_schedules() -> list:
    """The entries of every Schedule made from now on, kept as it is made (a finished
    run releases its schedule's trace)."""
    made: list = []
    init = webgpu_replay.Schedule.__init__

    def keep(self, backend, trace, *args, **kw):
        init(self, backend, trace, *args, **kw)
        made.append(_entries(trace))

    webgpu_replay.Schedule.__init__ = keep
    return made


def _entries(trace) -> list:
    return [e for e in trace.entries if e.op != "<upload>" and e.launches]


def census(name: str, dev, tier: str, steps: int, made: list) -> list | None:
    record = load_record(str(ROOT / "examples" / f"{name}.sml"))
    ds = load_dataset(record, ROOT / "examples")
    made.clear()
    out = asyncio.run(train_steps(record, dev, tier, steps, dataset=ds))
    if out.dispatches is None or not made:
        return None
    return made[-1]


def summary(name: str, tier: str, entries: list) -> str:
    by = collections.Counter()
    for e in entries:
        by[e.op] += len(e.launches)
    total = sum(by.values())
    lines = [f"## {name} / {tier}: {total} dispatches per replayed step"]
    lines += [f"  {n:4d}  {op}" for op, n in by.most_common()]
    return "\n".join(lines)


def detail(entries: list) -> str:
    lines = []
    for e in entries:
        shapes = " ".join("x".join(map(str, v.shape)) or "()" for v in e.ins)
        outs = " ".join("x".join(map(str, v.shape)) or "()" for v in e.outs)
        lines.append(f"  {len(e.launches)}  {e.op:<18} {shapes} -> {outs}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", default=",".join(CORPUS))
    p.add_argument("--tiers", default="prod")
    p.add_argument("--steps", type=int, default=5, help="enough for the schedule to record")
    p.add_argument("--detail", action="store_true", help="every launch in step order")
    p.add_argument(
        "--as-gpu", action="store_true", help="a software adapter counts a GPU's kernels"
    )
    a = p.parse_args(argv)
    dev = get_device("webgpu")
    if a.as_gpu:  # the kernels a discrete GPU gets: split-K matmuls, one-launch sequences
        dev = WebGPUBackend()
        dev.info = dataclasses.replace(dev.info, adapter_type="DiscreteGPU", name="as a GPU",
                                       vendor="", description="")  # fmt: skip
    made = _recorded_schedules()
    for name in a.records.split(","):
        for tier in a.tiers.split(","):
            entries = census(name, dev, tier, a.steps, made)
            if entries is None:
                print(f"## {name} / {tier}: the steps ran eagerly (no schedule)\n")
                continue
            print(summary(name, tier, entries))
            if a.detail:
                print(detail(entries))
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
