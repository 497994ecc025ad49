"""``scellis profile FILE`` (cli layer): where one training step's time goes.

After a few warm-up steps, one step of the record is profiled: per op, the host time
(encoding and launching its kernels) and, on WebGPU with timestamp queries, the GPU time
of its kernels, with the step's wall time; the largest first.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from ..base.errors import ScellisError
from ..base.files import read_file
from ..run.options import RunOptions
from ..run.prepare import RecordProblems
from ..run.profile import profile_step
from ..run.session import start_run
from .common import pick_device


@click.command("profile", help="Where one training step's time goes, op by op.")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--device", default="auto", show_default=True, help="auto | reference | webgpu")
@click.option("--warmup", type=click.IntRange(min=1), default=2, show_default=True,
              help="steps run before the profiled one")  # fmt: skip
@click.option("--top", type=click.IntRange(min=1), default=25, show_default=True,
              help="ops listed")  # fmt: skip
@click.option("--budget", default=None, help="memory budget for the plan, e.g. 4GiB")
@click.option("--json", "json_", is_flag=True, help="one JSON object")
def command(file, device, warmup, top, budget, json_):
    path = Path(file)
    raw = read_file(path)  # a FIFO or a device is refused, never waited on
    name, why = pick_device(device)
    try:
        session = start_run(raw, file, options=RunOptions(validate=False), device=name,
                            base_dir=path.parent, budget=budget, trusted=True)  # fmt: skip
    except RecordProblems as e:
        raise ScellisError(e.listing()) from None
    got = asyncio.run(profile_step(session, warmup))
    got["device_choice"] = why  # how --device auto chose ("" when the device was named)
    if json_:
        print(json.dumps(got))
        return 0
    _print(got, top)
    return 0


def _ms(s) -> str:
    return "-" if s is None else f"{s * 1e3:9.3f}"


def _print(got: dict, top: int) -> None:
    gpu = got["gpu_timed"]
    print(f"step {got['step']} on {got['device']} ({got['adapter']}): wall {_ms(got['wall_s'])} ms,"
          f" host {_ms(got['host_s'])} ms" + (f", GPU {_ms(got['gpu_s'])} ms" if gpu else
          " (no GPU timestamps on this device)"))  # fmt: skip
    if got["device_choice"]:  # e.g. why a software adapter was passed over
        print(f"  ({got['device_choice']})")
    print(f"  {'op':<24} {'calls':>6} {'host ms':>9}" + (f" {'kernels':>8} {'GPU ms':>9}" if gpu
                                                         else ""))  # fmt: skip
    for r in got["ops"][:top]:
        line = f"  {r['op']:<24} {r['calls']:>6} {_ms(r['host_s'])}"
        if gpu:
            line += f" {r['kernels']:>8} {_ms(r['gpu_s'])}"
        print(line)
