"""The run panel's entry points (webapp layer): train a record in the tab, pause, stop.

``train`` is an async generator of event dicts: ``fit``'s own events (start, log,
eval, epoch, end...) plus ``plan`` (the memory verdict, before the first step),
``progress`` (total steps, for the bar and the ETA) and ``sample`` (forecast vs
actual, or generated text). ``control`` is called by the worker as soon as a message
arrives; the loop reads it at every event, so pause and stop act at the next log point.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time

from ..autograd import no_grad
from ..base.errors import ScellisError
from ..data.text import TextDataset
from ..devices.base import get_device
from ..runtime.creation import tensor
from ..store import bundle
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train import Batches
from ..train.planning import plan_run
from ..train.prepare import check_record, prepare_run
from ..train.recording import keep_data_files, new_run, restore
from . import tab_store

_HISTORY = 2000  # metric points a resume sends back to the page, per curve
# what the page asked for; reset when a run starts
_control = {"paused": False, "stop": False}


def control(message) -> dict:
    """Apply a control message (a dict or its JSON): {"pause": bool} or {"stop": true}."""
    msg = json.loads(message) if isinstance(message, str) else dict(message)
    if "pause" in msg:
        _control["paused"] = bool(msg["pause"])
    if msg.get("stop"):
        _control["stop"] = True
    return dict(_control)


def plan(record_text: str, device: str = "webgpu") -> dict:
    """The memory plan of ``record_text``'s training step on ``device``'s limits,
    before anything runs (the ir layer's planner, tracing on the null device)."""
    record = check_record(record_text)
    return _plan_event(record, get_device(device))


def _plan_event(record: dict, device) -> dict:
    # the plan of the step the loop runs, as the CLI plans it (train.planning)
    return {"kind": "plan", **plan_run(record, device=device).record()}


async def check_kernel(code: str, device: str = "webgpu") -> dict:
    """Compile one WGSL compute shader (entry ``main``) on ``device`` and wait for the
    verdict: {"ok": true} or DeviceError with the compiler's message and the source.
    For authors of custom kernels; the browser reports shader errors asynchronously,
    so this waits on a readback, where they surface."""
    backend = get_device(device)
    gpu = getattr(backend, "gpu", None)
    if gpu is None:
        raise ScellisError(f"device {device!r} runs no WGSL")
    gpu.create_pipeline(code)
    probe = gpu.create_buffer(4, data=b"\x01\x02\x03\x04")
    try:
        await gpu.read_buffer(probe, 0, 4)
    finally:
        gpu.destroy_buffer(probe)
    return {"ok": True}


async def _wait_while_paused() -> None:
    while _control["paused"] and not _control["stop"]:
        await asyncio.sleep(0.05)


async def _series_sample(pipe) -> dict:
    ds = pipe.dataset
    # one training-sized batch: its kernels are compiled already (a software GPU pays
    # seconds per new shape)
    x = ds.x_val[: pipe.train.batch_size]
    n = len(x)
    with no_grad():
        pipe.model.eval()
        pred = pipe.model(tensor(x, device=pipe.device))
        pipe.model.train()
    values = await pred.read()
    flat = values if not values or not isinstance(values[0], list) else [r[0] for r in values]
    actual = [row[0] if isinstance(row, list) else row for row in ds.y_val[:n]]
    return {
        "kind": "sample",
        "type": "forecast",
        "predicted": [ds.denormalise(v) for v in flat],
        "actual": [ds.denormalise(v) for v in actual],
        "starts": ds.val_starts[:n],
    }


async def _text_sample(pipe, chars: int = 40) -> dict:
    """Greedy continuations of the first validation windows, one row per prompt: as
    many prompts as a training batch holds, so generation runs the forward kernels the
    steps compiled (a software GPU pays seconds per new shape). The window slides by
    one character per step and keeps its length for the same reason."""
    ds: TextDataset = pipe.dataset
    windows = [list(w) for w in ds.x_val[: pipe.train.batch_size]]
    if not windows:
        raise ScellisError("the text has no validation window to start a sample from")
    outs: list[list[int]] = [[] for _ in windows]
    with no_grad():
        pipe.model.eval()
        for _ in range(chars):
            logits = pipe.model(tensor(windows, device=pipe.device, dtype="i32"))
            last = logits[:, len(windows[0]) - 1]
            nxt = await last.argmax(axis=-1).read()  # the most likely next characters
            for w, out, c in zip(windows, outs, nxt):
                out.append(int(c))
                w.append(int(c))
                del w[0]
        pipe.model.train()
    rows = [
        {"prompt": ds.vocab.decode(p), "generated": ds.vocab.decode(o)}
        for p, o in zip(ds.x_val, outs)
    ]
    return {"kind": "sample", "type": "text", "greedy": True, **rows[0], "rows": rows}


async def _sample(pipe, chars: int = 40) -> dict:
    if isinstance(pipe.dataset, TextDataset):
        return await _text_sample(pipe, chars)
    return await _series_sample(pipe)


async def train(
    record_text: str,
    device: str = "webgpu",
    max_steps: int | None = None,
    epochs: int | None = None,
    log_every: int = 5,
    tier: str | None = None,
    samples: bool = True,
    text_samples: bool = False,
    validate: bool = True,
    drop_last: bool = False,
    store: str | None = None,
    checkpoint_every: int = 10,
    eval_every: int | None = None,
    val_rows: int | None = None,
    sample_chars: int = 40,
    replay: bool = False,
):
    """Train ``record_text`` in this process, yielding events. ``tier`` overrides the
    record's determinism tier; ``text_samples`` also generates text at every
    evaluation (otherwise once, at the end: generation costs one forward per char).
    ``validate`` off skips evaluation; ``drop_last`` drops short last batches (on a
    software GPU each new batch shape costs a round of shader compiles). With
    ``store`` (a folder: the worker's persistent one is ``tab_store.ROOT``) the run is
    recorded there like ``scellis train --store`` and checkpointed every
    ``checkpoint_every`` steps and at its end. ``eval_every`` N validates every N
    steps (otherwise at each epoch's end) on the first ``val_rows`` validation rows
    (all by default); ``sample_chars`` is the length of a generated text sample.
    ``replay`` runs steps as a recorded schedule (``fit(replay=True)``: bitwise equal
    to eager, falling back per step; the ``end`` event's ``replay`` says how it went)."""
    _control.update(paused=False, stop=False)
    _check_counts(eval_every=eval_every, val_rows=val_rows, sample_chars=sample_chars)
    if not isinstance(replay, bool):
        raise ScellisError(f"train: replay must be true or false, got {replay!r}")
    record = check_record(record_text)
    if tier is not None:
        record = {**record, "determinism_tier": tier}
    verdict = _plan_event(record, get_device(device))
    yield verdict
    if verdict["verdict"] == "red":
        fixes = "; ".join(r.get("fix", "") for r in verdict["remediations"]) or "none found"
        raise ScellisError(
            "the memory plan is red, so the run does not start: "
            + "; ".join(verdict["problems"])
            + f" (remediations: {fixes})"
        )
    pipe = _prepare(record, device, epochs, ".", drop_last=drop_last, val_rows=val_rows,
                    replay=replay)  # fmt: skip
    ts = pipe.ts
    recorder = None
    if store is not None:
        plan = {
            "epochs": pipe.epochs, "max_steps": max_steps, "log_every": log_every,
            "checkpoint_every": checkpoint_every, "keep_last": 3, "keep_best": True,
        }  # fmt: skip
        options = {"drop_last": drop_last, "validate": validate, "samples": samples,
                   "text_samples": text_samples, "eval_every": eval_every,
                   "val_rows": val_rows, "sample_chars": sample_chars,
                   "replay": replay}  # fmt: skip
        recorder = _new_run(store, record_text, record, pipe, plan, options)
    async for ev in _loop(pipe, ts, recorder, max_steps, log_every, samples, text_samples,
                          validate, eval_every=eval_every, chars=sample_chars):  # fmt: skip
        yield ev


def _prepare(record, device, epochs, base_dir, *, drop_last, val_rows, replay):
    """``prepare_run`` with the tab's options applied: what a run and its resume share."""
    pipe = prepare_run(record, device, epochs=epochs, base_dir=base_dir, drop_last=drop_last)
    if val_rows is not None:  # validate on the first rows only
        v = pipe.val
        pipe.val = Batches(v.x[:val_rows], v.y[:val_rows], v.batch_size, shuffle=False,
                           device=pipe.device)  # fmt: skip
    if replay:
        pipe.fit_kwargs["replay"] = True  # bitwise equal to eager; falls back per step
    return pipe


def _check_counts(**counts) -> None:
    for name, n in counts.items():
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ScellisError(f"train: {name} must be a whole number >= 1, got {n!r}")


async def resume(run: str, store: str = tab_store.ROOT, samples: bool | None = None,
                 device: str = "webgpu", step: int | None = None):  # fmt: skip
    """Continue run ``run`` of ``store`` from its latest checkpoint that loads (or from
    the one at ``step``), as ``scellis resume`` does: the record from the store, its data
    files written back out and re-hashed against the run's, the plan and the tab's
    options (drop_last, validate, samples...) from the run's config, later metrics and
    checkpoints dropped. ``samples`` overrides the stored choice."""
    _control.update(paused=False, stop=False)
    objects, records = ObjectStore(store), Records(store)
    try:
        rid = records.resolve(run)
        row = records.run(rid)
        if tab_store.status_of(row) == "running":
            raise ScellisError(f"run {rid} is running in this tab")
        config = row["config"]
        plan, opts = config["plan"], tab_store.options_of(config)
        if samples is not None:
            opts["samples"] = bool(samples)
        text = objects.get(row["record_hash"]).decode("utf-8")
        record = check_record(text)
        if row["tier"]:
            record = {**record, "determinism_tier": row["tier"]}
        record, base_dir = tab_store.local_data(objects, rid, config, record)
        pipe = _prepare(record, device, plan["epochs"], base_dir, drop_last=opts["drop_last"],
                        val_rows=opts["val_rows"], replay=opts["replay"])  # fmt: skip
        ts = pipe.ts
        # the CLI's resume point: that checkpoint or the latest loadable one, same data,
        # steps left
        back = restore(objects, records, rid, pipe, max_steps=plan["max_steps"], step=step)
        skipped, m = back.skipped, back.manifest
        # the curves so far, for a page that did not see them (a detached window, a
        # reloaded tab); the latest points only: a curve needs no more
        history = {n: [list(p) for p in records.metrics(rid, n)[-_HISTORY:]]
                   for n in ("loss", "val_loss", "lr")}  # fmt: skip
    finally:
        records.close()
    recorder = tab_store.Recorder(
        store, rid, row["record_hash"], m["dataset"], row["tier"], pipe.device,
        plan["checkpoint_every"], plan["keep_last"],
    )  # fmt: skip
    recorder.last_step = ts.step
    yield {"kind": "resume", "run": rid, "step": ts.step, "skipped": skipped}
    yield {"kind": "history", "run": rid, "metrics": history}
    async for ev in _loop(pipe, ts, recorder, plan["max_steps"], plan["log_every"],
                          opts["samples"], opts["text_samples"], opts["validate"],
                          eval_every=opts["eval_every"], chars=opts["sample_chars"]):  # fmt: skip
        yield ev


def store_taken() -> dict:
    """Said by the worker once it has taken the store over from another window."""
    tab_store.opened()
    return {"ok": True}


def runs(store: str = tab_store.ROOT) -> list[dict]:
    """The runs of the tab's store with their status (``interrupted`` for a dead tab's)."""
    return tab_store.list_runs(store)


def export_run(run: str, store: str = tab_store.ROOT) -> str:
    """Run ``run``'s bundle (``store.bundle``), base64-encoded for the trip to the page."""
    objects, records = ObjectStore(store), Records(store)
    try:
        return base64.b64encode(bundle.export_run(objects, records, records.resolve(run))).decode()
    finally:
        records.close()


def import_run(data: str, store: str = tab_store.ROOT) -> str:
    """Add a bundle (base64 of its bytes) to the tab's store; returns the run id."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (ValueError, TypeError):
        raise ScellisError("import_run: the bundle is not base64 text") from None
    objects, records = ObjectStore(store), Records(store)
    try:
        return bundle.import_run(objects, records, raw)
    finally:
        records.close()


def _new_run(store, record_text, record, pipe, plan, options) -> tab_store.Recorder:
    objects, records = ObjectStore(store), Records(store)
    try:
        # the runs row ``scellis resume`` reads back (train.recording), with what a
        # resume elsewhere needs: the tab's options and the user's data file
        extra = {"tab": options, "files": keep_data_files(objects, record)}
        rid, record_hash = new_run(objects, records, record_text.encode("utf-8"), pipe, plan,
                                   argv=["(tab)"], extra=extra)  # fmt: skip
    finally:
        records.close()
    return tab_store.Recorder(store, rid, record_hash, pipe.digest, pipe.tier, pipe.device,
                              plan["checkpoint_every"], plan["keep_last"])  # fmt: skip


async def _loop(pipe, ts, recorder, max_steps, log_every, samples, text_samples, validate,
                *, eval_every=None, chars=40):  # fmt: skip
    total = pipe.epochs * len(pipe.train)
    if max_steps is not None:
        total = min(total, int(max_steps))
    progress = {"kind": "progress", "total_steps": total, "epochs": pipe.epochs}
    if recorder is not None:  # the recorded run's id, for the page's run list
        progress["run"] = recorder.rid
    yield progress
    is_text = isinstance(pipe.dataset, TextDataset)
    gen = pipe.fit(max_steps=max_steps, log_every=log_every, validate=validate,
                   eval_every=eval_every)  # fmt: skip
    t0, last_loss, step = time.perf_counter(), None, 0
    status = "interrupted"  # what the row says if this generator is abandoned
    try:
        async for ev in gen:
            step = ev.get("step", step)
            if ev["kind"] == "log":
                last_loss = ev["loss"]
            if ev["kind"] == "end":
                if recorder is not None:
                    ck = await recorder.checkpoint(ts, "end")
                    if ck is not None:
                        yield ck
                if samples:
                    yield await _sample(pipe, chars)
            yield ev
            if recorder is not None:
                ck = await recorder.on_event(ev, ts)
                if ck is not None:
                    yield ck
            if ev["kind"] == "end":
                status = "done"
            if ev["kind"] == "eval" and samples and (text_samples or not is_text):
                yield await _sample(pipe, chars)
            await _wait_while_paused()
            if _control["stop"]:
                break
        if _control["stop"] and recorder is not None and ev["kind"] in ("log", "eval"):
            ck = await recorder.checkpoint(ts, "stop")
            if ck is not None:
                yield ck
    except ScellisError:
        status = "failed"
        raise
    finally:
        await gen.aclose()
        if recorder is not None:
            recorder.finish(status)
    if _control["stop"]:
        # fit's own end event never came: the run ends here, at a step boundary
        yield {"kind": "stopped", "step": step}
        if samples:
            yield await _sample(pipe, chars)
        yield {
            "kind": "end",
            "steps": step,
            "loss": last_loss,
            "wall_s": time.perf_counter() - t0,
            "stopped_by_user": True,
        }
