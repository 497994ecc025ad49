"""Train-step timing inside the tab (bench harness, not shipped): the Scellis side of
bench/browser_train_step.py, the same models and method as its tf.js side.

A site built with ``--extra-package bench/tab/tabbench`` imports this module in the worker
at boot, so its ``@command`` functions are worker commands there.

One step = forward + loss (MSE for the LSTMs, cross-entropy for the Transformers; see
tabbench.models) + backward + Adam on the worker's WebGPU device; after
``warmup`` steps (at least 3), ``steps`` steps then one loss readback, median of
``repeats`` blocks; ``host_ms_per_step`` is the median time of the step call itself, the
host's encoding with nothing awaited. ``first_step_ms`` runs
from the call to the first loss on the host (model build, uploads, shader compiles),
split in ``first_step``; the page adds the Pyodide start-up it measured before the engine was ready.

``replay=True`` runs the same step as a recorded dispatch schedule (runtime.replay):
the first steps run eagerly (the first makes Adam's state and the cached constants,
the next two are recorded and compared), then every step is the schedule with
Adam's step counts re-encoded on the host. The warm-up covers the recording, so
the timed blocks are all replays; ``replayed_steps`` counts them. The loss read at
the end is the recorded step's loss tensor, whose buffer every replay rewrites, so
an eager and a replayed call of the same ``steps``/``repeats``/``warmup`` end on
the same loss (``last_loss``) when replay is bitwise equal to eager.

``bench_split_train`` trains a record on the tab's device twice, once with its binding
limits lowered, so tensors are split into binding windows in a real browser.
"""

from __future__ import annotations

import array
import asyncio
import gc
import random
import statistics
import time
from pathlib import Path

from scellis.base.dtypes import f32
from scellis.base.errors import ScellisError
from scellis.catalog.optim import Adam
from scellis.catalog.peft.quantize import quantized_bytes
from scellis.codecs.convert import header_weights
from scellis.codecs.pretrained import pretrained_model
from scellis.codecs.weights import load_one, map_names
from scellis.devices.base import get_device
from scellis.run.options import RunOptions
from scellis.run.prepare import check_record
from scellis.run.session import start_run
from scellis.runtime.creation import from_bytes
from scellis.runtime.replay import StepReplay
from scellis.webapp import session_files, tab_store
from scellis.webapp.commands import command

from . import models as bench_models


@command(writes_store=False)
async def bench_train_step(
    model: str = "seed_lstm", steps: int = 20, repeats: int = 3, warmup: int = 2,
    replay: bool = False, shape: dict | None = None,
) -> dict:  # fmt: skip
    """ms per training step of ``model`` (a key of bench_models.CONFIGS, its sizes
    overridden by ``shape``) on this tab's WebGPU, eager or (``replay``) as a recorded
    schedule."""
    cfg = bench_models.config(model, shape)
    for name, n in (("steps", steps), ("repeats", repeats), ("warmup", warmup)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ScellisError(f"bench_train_step: {name} must be a whole number >= 1, got {n!r}")
    t0 = time.perf_counter()
    dev = get_device("webgpu")
    clock = _CompileClock(dev.gpu)
    net, loss_fn = bench_models.build(cfg, dev)
    opt = Adam(net, lr=cfg["lr"])
    xt, yt = bench_models.batch(cfg, dev)
    built_ms = (time.perf_counter() - t0) * 1e3
    pipelines0 = _stat(dev, "pipelines")

    def eager_step(x, y):
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss

    sr = StepReplay(dev, patched={opt.op}) if replay else None
    held = {"loss": None, "replayed": 0}

    def step():
        if sr is None:
            return eager_step(xt, yt)
        if sr.ready:
            sr.replay([xt, yt], opt.host_step())
            held["replayed"] += 1
            return held["loss"]  # the recorded step's loss: each replay rewrites it
        was_ready = sr.ready
        staged = sr.stage([xt, yt])
        with sr.eager(staged):
            loss = eager_step(*staged)
        if not was_ready:
            held["loss"] = loss
        return loss

    t1 = time.perf_counter()
    loss = step()
    encoded_ms = (time.perf_counter() - t1) * 1e3
    first = await loss.read()
    first_ms = (time.perf_counter() - t0) * 1e3
    first_step = {
        "build_ms": built_ms,  # model, optimizer and batch made and uploaded
        "encode_ms": encoded_ms,  # the step's ops run on the host, pipelines created
        "wait_ms": first_ms - built_ms - encoded_ms,  # compiles finishing + GPU work
        "pipelines": _stat(dev, "pipelines") - pipelines0,
        **clock.span(),
    }
    # replay needs 1 + 2 eager steps (warm-up, two recordings) before it is ready; eager
    # warms up as long, so both modes time steps 4, 5, ... of the same run
    for _ in range(max(warmup, 3) - 1):
        await step().read()
    if sr is not None and not sr.ready:
        why = sr.reason or "the two recorded steps did not agree"
        sr.close()
        raise ScellisError(f"bench_train_step: the step cannot replay: {why}")
    blocks, host = [], []
    for _ in range(repeats):
        s = time.perf_counter()
        for _ in range(steps):
            h = time.perf_counter()
            loss = step()
            host.append((time.perf_counter() - h) * 1e3)  # encoding only: nothing waits
        last = await loss.read()
        blocks.append((time.perf_counter() - s) / steps * 1e3)
    out = {
        "impl": "scellis-webgpu-replay" if replay else "scellis-webgpu",
        "ms_per_step": statistics.median(blocks),
        "host_ms_per_step": statistics.median(host),
        "first_step_ms": first_ms,
        "first_loss": first,
        "last_loss": last,
        "adapter": getattr(dev, "adapter_name", dev.name),
        "params": bench_models.parameter_count(net),
        "config": cfg,
        "first_step": first_step,
    }
    if sr is not None:
        out["replayed_steps"] = held["replayed"]
        out["dispatches_per_step"] = sr.schedule.dispatches
        # the dispatches a step encodes in one call per stretch (GPUs with dispatch_run)
        out["batched_dispatches"] = sum(
            len(r.items) for r in sr.schedule.runs if getattr(r, "prepared", None) is not None
        )
        sr.close()
    return out


class _CompileClock:
    """When the compiles a cold step started end, from a GPU that stamps them (the
    browser's: ``compile_times`` and ``now_ms``); nothing from one that does not."""

    def __init__(self, gpu):
        self.times = getattr(gpu, "compile_times", None)
        self.first = len(self.times()) if self.times is not None else 0
        self.t0 = gpu.now_ms() if self.times is not None else 0.0

    def span(self) -> dict:
        """``compiles_done_ms``: from the call to the last of its compiles resolved;
        ``compiles``: each one's (start since the call, ms), in the order made;
        ``slowest_compiles``: the three longest with their WGSL."""
        if self.times is None:
            return {}
        done = [
            (start - self.t0, end - start, code)
            for start, end, code in self.times()[self.first :]
            if end is not None
        ]
        if not done:
            return {}
        slowest = sorted(done, key=lambda d: -d[1])[:3]
        return {
            "compiles_done_ms": max(start + ms for start, ms, _ in done),
            "compiles": [[round(start, 1), round(ms, 1)] for start, ms, _ in done],
            "slowest_compiles": [{"start_ms": a, "ms": b, "wgsl": c} for a, b, c in slowest],
        }


async def _settle(model) -> None:
    """Wait until the GPU has done what was asked of ``model``'s tensors so far: the
    queue runs in order, so one value of its last parameter read back is enough."""
    last = list(model.parameters())[-1]
    await last.reshape(-1)[:1].read()


@command(writes_store=False)
async def bench_quantize(record_text: str, store: str = tab_store.ROOT) -> dict:
    """Seconds to build ``record_text``'s model on this tab's WebGPU with its header's
    weights, its frozen base quantised as its ``finetune:`` section says, as a run does
    before its first step (``build_s``: the stored object read, then each weight uploaded
    and, if quantised, encoded on the device and let go before the next); the model is
    dropped after."""
    record = check_record(record_text)
    section = record.get("finetune") or {}
    if not section.get("quantize_base"):
        raise ScellisError("bench_quantize: the record's finetune: section quantises nothing")
    dev = get_device("webgpu")
    t0 = time.perf_counter()
    weights = header_weights(record_text, Path(store))
    model = pretrained_model(record, weights, device=dev)
    del weights  # the host copy: wasm memory is the tab's scarcest
    await _settle(model)
    specs = [m.quant for _, m in model.named_modules() if getattr(m, "quant", None)]
    out = {"build_s": time.perf_counter() - t0, "quantized_weights": len(specs),
           "quantized_bytes": quantized_bytes(model)}  # fmt: skip
    del model
    gc.collect()
    return out


@command(writes_store=False)
async def bench_split_train(record_text: str, limits: dict, steps: int = 4) -> dict:
    """``record_text`` trained for ``steps`` replayed steps (not stored) on this tab's
    WebGPU with ``limits`` lowered (a second backend on the same device), then on the
    device as it is: each run's losses and its plan's verdict, warnings and split tensors. With low
    binding limits, tensors wider than a binding are split into windows in the tab."""
    base = get_device("webgpu")
    lowered = type(base)(limits=limits)
    out = {}
    for name, dev in (("lowered", lowered), ("as_is", base)):
        options = RunOptions(max_steps=steps, log_every=1, validate=False)
        s = start_run(record_text.encode(), "split.sml", options=options, device=dev)
        losses, plan = [], {}
        async for ev in s.events():
            if ev.kind == "log":
                losses.append(ev.loss)
            elif ev.kind == "plan":
                plan = ev.to_dict()
        out[name] = {"losses": losses, "verdict": plan.get("verdict"),
                     "warnings": plan.get("warnings", []),
                     "split_tensors": plan.get("split_tensors") or 0}  # fmt: skip
    return out


def _stat(dev, key: str) -> int:
    return int(getattr(dev, "stats", {}).get(key, 0))


@command(writes_store=False)
def bench_keep_limit(limit: int) -> dict:
    """Lower (or raise) the size over which a file is kept in the tab's memory only
    (``session_files.KEEP_LIMIT``), so a small model takes the path a 2 GiB one takes."""
    before, session_files.KEEP_LIMIT = session_files.KEEP_LIMIT, int(limit)
    return {"before": before, "limit": session_files.KEEP_LIMIT}


@command(writes_store=False)
def bench_device_memory() -> dict:
    """The tab's WebGPU backend's own count of device memory, in bytes: held now (live
    tensors and the pool's free storages) and the peaks since the worker started
    (``peak_bytes``: live tensors; ``held_peak_bytes``: with the pool), to set beside
    what the card itself reports for the browser's GPU process; ``kept_peak_bytes``: the
    most the work kept behind compiling pipelines held, which the backend does not count."""
    dev = get_device("webgpu")
    keys = ("live_bytes", "pooled_bytes", "peak_bytes", "held_peak_bytes")
    out = {k: int(getattr(dev, k, 0)) for k in keys}
    out["kept_peak_bytes"] = int(getattr(dev.gpu, "kept_bytes_peak", 0))
    return out


@command(writes_store=False)
async def bench_load_paced(record_text: str, pause_mib: int = 0,
                           store: str = tab_store.ROOT) -> dict:  # fmt: skip
    """``record_text``'s model built and its header's weights loaded tensor by tensor, the
    worker's command giving the browser a turn (``await``) after every ``pause_mib`` MiB
    of weights (0: never, as a run's synchronous load does); then dropped. For telling
    whether the browser frees a load's staging memory only when the worker yields."""
    record = check_record(record_text)
    dev = get_device("webgpu")
    t0 = time.perf_counter()
    weights = header_weights(record_text, Path(store))
    model = pretrained_model({k: v for k, v in record.items() if k != "finetune"}, None,
                             device=dev)  # fmt: skip
    params = dict(model.named_parameters())
    mapped, _ = map_names(weights, {k: tuple(p.shape) for k, p in params.items()})
    since, pauses = 0, 0
    for path, raw in mapped.items():  # load_into, one tensor at a time
        since += load_one(model, path, params[path], raw)
        if pause_mib and since >= pause_mib << 20:
            since, pauses = 0, pauses + 1
            await asyncio.sleep(0.005)
    await _settle(model)
    out = {"load_s": time.perf_counter() - t0, "pauses": pauses}
    del model
    gc.collect()
    return out


_DOUBLE_FIRST = """// a kernel no other command compiles ({nonce})
@group(0) @binding(0) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {{
    b[id.x] = 2.0 * b[id.x];
}}
"""


@command(writes_store=False)
async def bench_kept_uploads(count: int = 16, numel: int = 65536, kept_max: int = 1 << 20,
                             seed: int = 0) -> dict:  # fmt: skip
    """Upload ``count`` tensors of ``numel`` random f32 values right after a dispatch of a
    pipeline this worker has never compiled, as a model's load meets a new kernel: every
    write after it is kept in a staging buffer of its own. The kept work may hold
    ``kept_max`` bytes for the command (``BrowserGPU.kept_bytes_max``). Returns the most
    it held (``kept_bytes_peak``), one tensor's bytes and whether every value read back as
    sent (the first 64 of the first tensor doubled by the new kernel)."""
    dev = get_device("webgpu")
    gpu = dev.gpu
    rng = random.Random(seed)
    sent = [[rng.uniform(-4.0, 4.0) for _ in range(numel)] for _ in range(count)]
    before, gpu.kept_bytes_max, gpu.kept_bytes_peak = gpu.kept_bytes_max, kept_max, 0
    try:
        first = from_bytes(array.array("f", sent[0]).tobytes(), (numel,), f32, device=dev)
        kernel = gpu.create_pipeline(_DOUBLE_FIRST.format(nonce=time.time_ns()))
        gpu.dispatch(kernel, [(first._buf.handle.chunks[0], 0, 256)], (1, 1, 1))
        held = [first] + [
            from_bytes(array.array("f", v).tobytes(), (numel,), f32, device=dev) for v in sent[1:]
        ]
        peak = gpu.kept_bytes_peak
        got = [array.array("f", await t.read_bytes()).tolist() for t in held]
    finally:
        gpu.kept_bytes_max = before
    expected = [array.array("f", v).tolist() for v in sent]  # as f32 holds them
    expected[0][:64] = [2.0 * x for x in expected[0][:64]]
    return {"kept_bytes_peak": peak, "tensor_bytes": 4 * numel, "equal": got == expected}
