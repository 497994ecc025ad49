"""Running a record against a store (cli layer): what ``train`` and ``resume`` share.

``prepare`` turns a record's text into the live pieces (model, optimizer, scheduler,
loss, data) on a device: the train layer's ``prepare_run``, which the tab uses too,
once the memory plan (``train.planning``) has passed. ``drive`` runs the async
training loop over the run's ``TrainState`` and, at step boundaries, writes what the
store keeps (``train.recording``): per-step metrics, heartbeats, checkpoints every N
steps and at the end. Ctrl-C only raises a flag; the loop stops
at the next step boundary, checkpoints, and the run ends ``interrupted`` (exit 130)
with the command that resumes it.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ScellisError
from ..codecs.convert import header_weights
from ..devices.base import get_device
from ..sml import emit, parse
from ..store import runfiles
from ..store.gc import collect
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train.planning import plan_run
from ..train.prepare import Prepared, RecordProblems, check_record, prepare_run
from ..train.recording import RunRecorder
from .common import pick_device
from .progress import Progress


def check_text(raw: bytes, label: str) -> dict:
    """The record of a text; its problems, located, as one ScellisError (one a line)."""
    try:
        return check_record(raw, label)
    except RecordProblems as e:
        raise ScellisError("\n".join(str(d) for d in e.problems)) from None


def prepare(
    raw: bytes, label: str, base_dir: Path, device_name: str, budget: str | None = None,
    store=None, epochs: int | None = None, sources: dict | None = None,
) -> Prepared:  # fmt: skip
    """The run's live pieces (``train.prepare``) on the device ``device_name`` picks;
    with ``store``, an imported record's header weights are loaded first (a resume
    passes none: its checkpoint holds every tensor). ``epochs`` replaces the record's;
    ``sources`` (``store.runfiles.local_sources``) reads the data from the run's kept copy."""
    record = check_text(raw, label)
    if sources:
        record = runfiles.with_local_data(record, sources)
    device, why = pick_device(device_name)
    dev = get_device(device)
    # the memory plan traces on the null device: a red plan refuses before any allocation
    plan_run(record, device=dev, budget=budget, refuse=True)
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    weights = header_weights(text, store) if store is not None else None
    s = prepare_run(record, dev, base_dir=base_dir, epochs=epochs, weights=weights, label=label)
    s.why = why
    return s


@dataclass
class Plan:
    """How a run is driven; stored in the run's config so a resume drives it the same."""

    epochs: int
    max_steps: int | None
    log_every: int
    checkpoint_every: int
    keep_last: int
    keep_best: bool


class Stop:
    """Ctrl-C as a flag read at step boundaries (the state is consistent only there)."""

    def __init__(self):
        self.requested = False
        self._old = None

    def __enter__(self):
        def handler(signum, frame):
            if self.requested:  # a second Ctrl-C: give up waiting for the step to end
                raise KeyboardInterrupt
            self.requested = True

        try:
            self._old = signal.signal(signal.SIGINT, handler)
        except ValueError:  # not the main thread: Ctrl-C is not ours to handle
            self._old = None
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


class Heartbeat:
    """Beats every ``every`` seconds from a thread with its own connection, so a step
    longer than the stale limit does not make a live run look dead from another host."""

    def __init__(self, root: Path, rid: str, every: float = 10.0):
        self.root, self.rid, self.every = root, rid, every
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="scellis-heartbeat", daemon=True)

    def _beat(self):
        try:
            records = Records(self.root)
        except ScellisError:
            return
        try:
            while not self.done.wait(self.every):
                try:
                    records.heartbeat(self.rid)
                except ScellisError:
                    pass  # a full disk or a busy file: the next beat tries again
        finally:
            records.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(timeout=5)
        return False


def resume_command(root: Path, rid: str) -> str:
    store = "" if Path(root) == Path(".scellis") else f" --store {root}"
    return f"scellis resume {rid}{store}"


async def _drive(s: Prepared, plan: Plan, objects, records, rid, record_hash, out, stop, fault):
    ts = s.ts
    recorder = RunRecorder(
        objects, records, rid, record_hash=record_hash, dataset=s.digest, tier=s.tier,
        device=s.device, keep_last=plan.keep_last, keep_best=plan.keep_best, fault=fault,
    )  # fmt: skip

    async def checkpoint(reason: str):
        h = await recorder.save(ts)
        if h is not None:
            out.event({"kind": "checkpoint", "step": ts.step, "manifest": h, "reason": reason})

    end = None
    async for ev in s.fit(max_steps=plan.max_steps, log_every=plan.log_every):
        kind = ev["kind"]
        recorder.log(ev)
        if kind == "end":
            end = ev
        out.event(ev)
        if kind == "log" and ts.step % plan.checkpoint_every == 0:
            await checkpoint("every")
        # only after a log or an eval is the state one a resume can continue from (after
        # the epoch event, that epoch's evaluation has not run yet)
        if stop.requested and kind in ("log", "eval"):
            await checkpoint("interrupt")
            return None
    await checkpoint("end")
    return end


def drive(
    s: Prepared, plan: Plan, root: Path, rid: str, record_hash: str, out, fault=None, writer=None
) -> int:
    """Train to the plan's end; ``fault`` and ``writer`` are fault-injection seams (tests)."""
    objects, records = ObjectStore(root, writer=writer), Records(root)
    try:
        with Stop() as stop, Heartbeat(root, rid):
            try:
                end = asyncio.run(
                    _drive(s, plan, objects, records, rid, record_hash, out, stop, fault)
                )
            except KeyboardInterrupt:
                _finish(records, rid, "interrupted")
                out.fail("interrupted before the step ended; the last checkpoint stands")
                out.resume_hint(resume_command(root, rid))
                return 130
            except ScellisError as e:
                _finish(records, rid, "failed")
                out.fail(str(e))
                out.resume_hint(resume_command(root, rid))
                return 2
        if end is None:
            _finish(records, rid, "interrupted")
            out.fail(f"interrupted at step {s.ts.step}; checkpoint saved")
            out.resume_hint(resume_command(root, rid))
            return 130
        records.finish(rid, "done")
        collect(objects, records)
        out.summary(end, rid)
        return 0
    finally:
        records.close()


def _finish(records: Records, rid: str, status: str) -> None:
    """Record how the run ended, if the store still can (a full disk may refuse: the
    run then reads as interrupted once this process is gone, which is as resumable)."""
    try:
        records.finish(rid, status)
    except ScellisError:
        pass


class Output:
    """Where events go: a progress bar on a TTY, plain lines otherwise, or JSON lines."""

    def __init__(self, json_mode: bool, print_every: int, total: int | None):
        self.json = json_mode
        self.print_every = max(1, print_every)
        self.bar = Progress(total) if (not json_mode and sys.stdout.isatty()) else None

    def _j(self, obj):
        print(json.dumps(obj, default=str), flush=True)

    def info(self, message: str, **extra):
        if self.json:
            self._j({"kind": "info", "message": message, **extra})
        else:
            print(message, flush=True)

    def event(self, ev: dict):
        if self.json:
            if ev["kind"] == "end":
                return  # the summary: written last, after the final checkpoint, with the run id
            if ev["kind"] in ("log", "eval", "checkpoint"):
                ev = {"step": ev.get("step"), "loss": ev.get("loss"), "lr": ev.get("lr"), **ev}
            self._j(ev)
            return
        kind = ev["kind"]
        if kind == "log" and self.bar is not None:
            self.bar.update(ev)
        elif kind == "log" and ev["step"] % self.print_every == 0 and ev["loss"] is not None:
            print(
                f"  step {ev['step']:6d}  epoch {ev['epoch']:3d}  loss {ev['loss']:.4f}  "
                f"lr {ev['lr']:.3g}  {ev['throughput']:.0f} samples/s",
                flush=True,
            )
        elif kind == "eval" and self.bar is None:
            print(f"  eval  step {ev['step']:6d}  val_loss {ev['val_loss']:.4f}", flush=True)
        elif kind == "warning":
            self._line(f"  warning: {ev.get('message', ev)}")

    def _line(self, text: str):
        if self.bar is not None:
            self.bar.clear()
        print(text, flush=True)

    def fail(self, message: str):
        if self.bar is not None:
            self.bar.clear()
        if self.json:
            self._j({"kind": "error", "message": message})
        else:
            print(f"scellis: {message}", file=sys.stderr, flush=True)

    def resume_hint(self, cmd: str):
        if self.json:
            self._j({"kind": "resume", "command": cmd})
        else:
            print(f"resume with: {cmd}", file=sys.stderr, flush=True)

    def summary(self, end: dict, rid: str):
        if self.bar is not None:
            self.bar.finish()
        if self.json:
            self._j({**end, "run": rid})
            return
        val = end.get("val_loss")
        print(
            f"done: run {rid}, {end['steps']} steps in {end['wall_s']:.1f}s, loss "
            f"{_f(end.get('loss'))}, val_loss {_f(val)}",
            flush=True,
        )


def _f(v) -> str:
    return "n/a" if v is None else f"{v:.4f}"


MODEL_ID = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+@([0-9]+)$")


def resolve_record(ref: str, root: Path) -> tuple[bytes, str, Path]:
    """A record's text, its label and the folder its data paths are relative to.

    ``ref`` is a file, or a model id like ``user/ada/tiny@3`` from the store's models
    table. A file with no ``blocks`` whose ``model:`` names a stored id builds on that
    record: its other top-level keys (data, epochs, optimizer...) replace the stored ones.
    """
    p = Path(ref)
    if p.is_file():
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise ScellisError(f"{ref}: cannot read ({e.strerror or e})") from None
        base = p.resolve().parent
        try:
            data = parse(raw, ref).data
        except ScellisError:
            return raw, ref, base  # validation reports it, located
        mid = data.get("model") if isinstance(data, dict) else None
        if "blocks" in data or not isinstance(mid, str) or not MODEL_ID.match(mid):
            return raw, ref, base
        doc = parse(_stored(mid, root), mid)
        for key, value in data.items():
            if key != "model":
                doc.set((key,), value)
        return emit(doc).encode("utf-8"), f"{ref} (on {mid})", base
    if MODEL_ID.match(ref) is None:
        raise ScellisError(f"{ref}: no such file, and not a model id like namespace/name@3")
    return _stored(ref, root), ref, Path.cwd()


def _stored(ref: str, root: Path) -> bytes:
    name, version = ref.rsplit("@", 1)
    if not (Path(root) / "records.sqlite").exists():
        raise ScellisError(f"model {ref} is not in the store {root} (it has no records yet)")
    records = Records(root)
    try:
        obj = records.model(name, int(version))
        if obj is None:
            have = [f"{r['name']}@{r['version']}" for r in records.models() if r["name"] == name]
            hint = f"; the store has {', '.join(have)}" if have else ""
            raise ScellisError(f"model {ref} is not in the store {root}{hint}")
    finally:
        records.close()
    return ObjectStore(root).get(obj)
