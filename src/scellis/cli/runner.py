"""Driving a run session from the terminal (cli layer): what ``train`` and ``resume`` share.

The run itself is a ``run.session.RunSession``; here is only what a terminal adds:
``resolve_record`` (a file or a stored model id), ``drive`` (``asyncio.run`` over the
session's events, a heartbeat thread for steps longer than the stale limit, Ctrl-C as
the session's stop) and ``Output``, the printer of its events (a progress bar on a
terminal, lines otherwise, JSON lines with ``--json``). Ctrl-C stops at the next step
boundary after a checkpoint; the run ends ``interrupted`` (exit 130) with the command
that resumes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import threading
from pathlib import Path

from ..base.errors import ScellisError
from ..base.files import read_file
from ..base.interrupt import raise_interrupt
from ..run.prepare import RecordProblems, check_record
from ..run.session import RunControl, RunSession
from ..sml import emit, parse
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train import events as E
from .progress import Progress
from .run_text import baseline_text, fmt_metric, resume_command


def check_text(raw: bytes, label: str, base_dir=".", *, trusted: bool = False) -> dict:
    """The record of a text; its problems, located, as one ScellisError (one a line).
    ``trusted``: a file the user names, whose extensions may load (from ``base_dir``)."""
    try:
        return check_record(raw, label, base_dir=base_dir, trusted=trusted)
    except RecordProblems as e:
        raise ScellisError(e.listing()) from None


class Stop:
    """Ctrl-C as the session's stop, read at step boundaries (the state is consistent
    only there)."""

    def __init__(self, control: RunControl):
        self.control = control
        self._old = None

    def __enter__(self):
        def handler(signum, frame):
            if self.control.stopping:  # a second Ctrl-C: give up waiting for the step
                raise_interrupt(signum, frame)
                return
            self.control.stop("interrupt")

        self._old = {}
        for sig in (signal.SIGINT, signal.SIGTERM):  # a kill or a closing terminal: the same
            try:
                self._old[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread: signals are not ours to handle
                pass
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
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


async def _print_events(session: RunSession, out) -> E.End | None:
    end = None
    async for ev in session.events():
        out.event(ev)
        if ev.kind == "end":
            end = ev
    return end


def drive(session: RunSession, out) -> int:
    """Train to the session's end, printing its events; returns the exit status."""
    root, rid = session.root, session.rid
    out.control = session.control
    with Stop(session.control), Heartbeat(root, rid):
        try:
            end = asyncio.run(_print_events(session, out))
        except KeyboardInterrupt:
            _mark_interrupted(root, rid)
            out.fail("interrupted before the step ended; the last checkpoint stands")
            out.resume_hint(resume_command(root, rid))
            return 130
        except ScellisError as e:
            out.fail(str(e))
            if _has_checkpoint(root, rid):  # else there is nothing a resume could start from
                out.resume_hint(resume_command(root, rid))
            return 2
    if end is None or end.stopped_by_user:
        step = end.steps if end is not None else session.ts.step
        out.fail(f"interrupted at step {step}; checkpoint saved")
        out.resume_hint(resume_command(root, rid))
        return 130
    out.summary(end)
    return 0


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush meets no closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _has_checkpoint(root: Path, rid: str) -> bool:
    try:
        records = Records(root)
    except ScellisError:
        return False
    try:
        return bool(records.checkpoints(rid))
    except ScellisError:
        return False
    finally:
        records.close()


def _mark_interrupted(root: Path, rid: str) -> None:
    """A second Ctrl-C abandoned the step: say so in the row, if the store still can."""
    try:
        records = Records(root)
    except ScellisError:
        return
    try:
        records.finish(rid, "interrupted")
    except ScellisError:
        pass
    finally:
        records.close()


class Output:
    """Where events go: a progress bar on a TTY, plain lines otherwise, or JSON lines."""

    def __init__(self, json_mode: bool, print_every: int, total: int | None):
        self.json = json_mode
        self.print_every = max(1, print_every)
        self.bar = Progress(total) if (not json_mode and sys.stdout.isatty()) else None
        self.last_eval: E.Eval | None = None
        self.closed = False  # stdout's reader went away
        self.control: RunControl | None = None  # the run a closed stdout stops

    def _j(self, ev: E.Event):
        self._print(json.dumps(ev.to_dict(), default=str))

    def _print(self, text: str) -> None:
        """A line on stdout; a reader that went away (a closed pipe) stops the run at
        the next step boundary, as Ctrl-C does, and nothing more is printed there."""
        if self.closed:
            return
        try:
            print(text, flush=True)
        except BrokenPipeError:
            self.closed = True
            _quiet_stdout()
            if self.control is not None:
                self.control.stop("stdout closed")

    def info(self, message: str, **extra):
        if self.json:
            self._j(E.Info(message=message, **extra))
        else:
            self._print(message)

    def event(self, ev: E.Event):
        if self.json:
            self._j(ev)
            return
        show = _TERMINAL.get(ev.kind)
        if show is not None:
            show(self, ev)

    def _log(self, ev: E.Log):
        if self.bar is not None:
            self.bar.update(ev)
        elif ev.step % self.print_every == 0 and ev.loss is not None:
            self._print(
                f"  step {ev.step:6d}  epoch {ev.epoch:3d}  loss {ev.loss:.4f}  "
                f"lr {ev.lr:.3g}  {ev.throughput:.0f} samples/s"
            )

    def _eval(self, ev: E.Eval):
        self.last_eval = ev
        line = f"  eval  step {ev.step:6d}  val_loss {ev.val_loss:.4f}{metrics_text(ev)}"
        if self.bar is None:
            self._print(line)

    def _line(self, text: str):
        if self.bar is not None:
            self.bar.clear()
        self._print(text)

    def _sample(self, ev: E.Sample):
        if ev.type == "text":
            self._line(f"  sample: {ev.prompt!r} -> {ev.generated!r}")
        else:
            pairs = ", ".join(f"{p:.3g}/{a:.3g}" for p, a in zip(ev.predicted, ev.actual))
            self._line(f"  forecast/actual: {pairs[:200]}")

    def fail(self, message: str):
        if self.bar is not None:
            self.bar.clear()
        if self.json:
            self._j(E.Error(message=message))
        else:
            print(f"scellis: {message}", file=sys.stderr, flush=True)

    def resume_hint(self, cmd: str):
        if self.json:
            self._j(E.ResumeHint(command=cmd))
        else:
            print(f"resume with: {cmd}", file=sys.stderr, flush=True)

    def summary(self, end: E.End):
        if self.bar is not None:
            self.bar.finish()
        if self.json:
            return  # the end event was the last line
        self._print(
            f"done: run {end.run}, {end.steps} steps in {end.wall_s:.1f}s, loss "
            f"{_f(end.loss)}, val_loss {_f(end.val_loss)}"
        )
        if self.last_eval is not None and self.last_eval.metrics:
            self._print(f"validation at step {self.last_eval.step}:{metrics_text(self.last_eval)}")
            if self.last_eval.verdict:
                self._print(f"  verdict: {self.last_eval.verdict['text']}")


# what a terminal shows of each kind (the others are for --json and the tab)
_TERMINAL = {
    "log": Output._log,
    "eval": Output._eval,
    "sample": Output._sample,
    "warning": lambda out, ev: out._line(f"  warning: {ev.message}"),
    "info": lambda out, ev: out._line(f"  {ev.message}"),
    "early_stop": lambda out, ev: out._line(f"  early stop: {ev.reason}"),
}


def metrics_text(ev) -> str:
    """``  mae 0.29 (persistence 0.40, seasonal naive 0.48)  rmse ...`` of an eval event."""
    return "".join(
        f"  {name} {fmt_metric(value)}" + baseline_text(ev.baselines or {}, name)
        for name, value in (ev.metrics or {}).items()
    )


def _f(v) -> str:
    return "n/a" if v is None else f"{v:.4f}"


MODEL_ID = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+@([0-9]+)$")


def resolve_record(ref: str, root: Path) -> tuple[bytes, str, Path, bool]:
    """A record's text, its label, the folder its data paths are relative to, and whether
    it is trusted to load its extensions (only a file the user names, as it is).

    ``ref`` is a file, or a model id like ``user/ada/tiny@3`` from the store's models
    table. A file with no ``blocks`` whose ``model:`` names a stored id builds on that
    record: its other top-level keys (data, epochs, optimizer...) replace the stored ones;
    the stored part may have come from anyone, so that record loads no code itself.
    """
    p = Path(ref)
    if p.exists() and not p.is_file():  # a folder, a FIFO, a device: says what it is
        read_file(p)
    if p.is_file():
        raw = read_file(p)
        base = p.resolve().parent
        try:
            data = parse(raw, ref).data
        except ScellisError:
            return raw, ref, base, True  # validation reports it, located
        mid = data.get("model") if isinstance(data, dict) else None
        if "blocks" in data or not isinstance(mid, str) or not MODEL_ID.match(mid):
            return raw, ref, base, True
        doc = parse(_stored(mid, root), mid)
        for key, value in data.items():
            if key != "model":
                doc.set((key,), value)
        return emit(doc).encode("utf-8"), f"{ref} (on {mid})", base, False
    if MODEL_ID.match(ref) is None:
        raise ScellisError(f"{ref}: no such file, and not a model id like namespace/name@3")
    return _stored(ref, root), ref, Path.cwd(), False


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
