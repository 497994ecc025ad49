"""Where a training step's time goes (run layer): ``profile_step``.

A record's session runs a few warm-up steps (shaders compiled, buffers pooled), then
one profiled step: every op's host time (encoding and launching its kernels, or the
reference device computing it) and, on WebGPU with timestamp queries, every kernel's
GPU time, summed by op. The step's wall time is measured to its loss readback.
"""

from __future__ import annotations

import time
from collections import defaultdict

from ..base.errors import ScellisError


async def profile_step(session, warmup: int = 2) -> dict:
    """The profile of step ``warmup + 1`` of ``session`` (a ``RunSession``)."""
    if warmup < 1:
        raise ScellisError("profile: warm up for at least one step (shaders compile then)")
    prep = session.prep
    dev, gpu = prep.device, getattr(prep.device, "gpu", None)
    timed = gpu is not None and "timestamp-query" in getattr(gpu.info, "features", ())
    gpu_times: list = []
    t0 = wall = 0.0
    gen = prep.fit(max_steps=warmup + 1, log_every=1, validate=False)
    try:
        async for ev in gen:
            if ev.kind == "log" and ev.step == warmup:
                dev.host_times = []
                if timed:
                    gpu.start_timing()
                t0 = time.perf_counter()
            elif ev.kind == "log" and ev.step == warmup + 1:
                wall = time.perf_counter() - t0  # to the loss readback: the GPU is done
                if timed:
                    gpu_times = await gpu.stop_timing()
    finally:
        await gen.aclose()
    host_times, dev.host_times = dev.host_times or [], None
    if not host_times:
        raise ScellisError(f"profile: the run ended before step {warmup + 1}")
    return _summary(dev, warmup + 1, wall, host_times, gpu_times, timed)


def _summary(dev, step: int, wall: float, host_times, gpu_times, timed: bool) -> dict:
    by_op: dict = defaultdict(lambda: {"calls": 0, "kernels": 0, "host_s": 0.0, "gpu_s": 0.0})
    for op, seconds in host_times:
        by_op[op]["calls"] += 1
        by_op[op]["host_s"] += seconds
    for op, seconds in gpu_times:
        by_op[op]["kernels"] += 1
        by_op[op]["gpu_s"] += seconds
    rows = [{"op": op, **v} for op, v in by_op.items()]
    rows.sort(key=lambda r: (-(r["gpu_s"] if timed else r["host_s"]), r["op"]))
    info = getattr(dev, "info", None)
    return {
        "device": dev.name, "adapter": getattr(info, "name", dev.name), "step": step,
        "wall_s": wall, "host_s": sum(r["host_s"] for r in rows),
        "gpu_s": sum(r["gpu_s"] for r in rows) if timed else None,
        "gpu_timed": timed, "ops": rows,
    }  # fmt: skip
