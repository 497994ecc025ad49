"""One training run as a session (run layer): record → plan → fit → store → final status.

``start_run`` and ``resume_run`` build a ``RunSession``: the record with the run's
edits, validated; its memory plan (a red one refuses before anything is allocated);
its live pieces (``run.prepare``); in a store, its runs row (or the reopened one and
the checkpoint it continues from). ``RunSession.events()`` then drives ``train.fit``
and owns everything around it: the metrics rows, the checkpoint cadence, samples,
pause and stop (``RunControl``), and the status the run ends with. The CLI prints
these events and the tab forwards them; neither decides anything about the run.

The checkpoint cadence: every ``checkpoint_every`` steps when it is set, else at each
epoch's end; in both cases also whenever ``checkpoint_minutes`` of wall time have
passed since the last one, and always at the end or at a stop. A checkpoint is only
written where a resume can continue from: at a log point, after an evaluation, or at
an epoch's end when no evaluation follows it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..base.errors import ScellisError, shown
from ..catalog.extensions import load_extensions
from ..codecs.convert import header_weights
from ..data.text import TextDataset
from ..devices.base import get_device
from ..ir.plan import PlanRefused
from ..store import runfiles
from ..store.objects import ObjectStore
from ..store.records import Records
from ..train import events as E
from .baselines import baselines
from .checks import check_data_fits, locator
from .effective import at_edits, effective_record, sha256_hex
from .options import RunOptions, legacy_epochs
from .planning import plan_steps
from .prepare import RecordProblems, check_record, prepare_run
from .recording import RunRecorder, keep_data_files, new_run, restore
from .samples import sample
from .verdict import verdict

HISTORY_POINTS = 2000  # stored metric points a resume hands back, per curve


class RunControl:
    """Pause and stop, as flags the session reads between events (step boundaries)."""

    def __init__(self):
        self.paused = False
        self.stop_reason: str | None = None

    def pause(self, on: bool = True) -> None:
        self.paused = bool(on)

    def stop(self, reason: str = "stop") -> None:
        self.stop_reason = self.stop_reason or reason

    @property
    def stopping(self) -> bool:
        return self.stop_reason is not None

    async def wait_while_paused(self) -> None:
        while self.paused and not self.stopping:
            await asyncio.sleep(0.05)


@dataclass
class StoreSeams:
    """Fault-injection seams of the store writes (tests): see ``run.recording``."""

    fault: Any = None
    writer: Any = None


@dataclass
class RunSession:
    """A prepared run and, when it is recorded, its store and runs row."""

    prep: Any  # run.prepare.Prepared
    options: RunOptions
    control: RunControl = field(default_factory=RunControl)
    root: Path | None = None
    rid: str | None = None
    record_hash: str | None = None
    pending: list = field(default_factory=list)  # events decided before the first step
    restored: Any = None  # run.recording.Restored, for a resumed run
    seams: StoreSeams = field(default_factory=StoreSeams)
    edits: list[str] = field(default_factory=list)
    baselines: dict = field(default_factory=dict)  # naive forecasts' (or unigram) metrics

    @property
    def ts(self):
        return self.prep.ts

    @property
    def total_steps(self) -> int:
        total = self.prep.epochs * len(self.prep.train)
        return min(total, self.options.max_steps) if self.options.max_steps else total

    async def events(self):
        """The run's events, from its plan to its ``end`` (see the module note)."""
        for ev in self.pending:
            yield ev
        yield E.Progress(total_steps=self.total_steps, epochs=self.prep.epochs, run=self.rid)
        cadence = Cadence(self)
        recorder = self._recorder()
        status = "interrupted"  # what the row says if this generator is abandoned
        done = 0  # the steps done so far, from the events' step fields (a resume's start)
        o = self.options
        gen = self.prep.fit(
            max_steps=o.max_steps, log_every=o.log_every, validate=o.validate,
            eval_every=o.eval_every or self.prep.eval_every,
            should_stop=lambda: self.control.stopping,
        )  # fmt: skip
        try:
            async for ev in gen:
                if recorder is not None:
                    recorder.log(ev)
                if ev.kind == "end":
                    async for out in self._ending(ev, recorder):
                        yield out
                    status = "interrupted" if ev.stopped_by_user else "done"
                    continue
                if ev.kind == "eval" and self.baselines:
                    ev.baselines = self.baselines
                    ev.verdict = verdict(ev.metrics, self.baselines)
                yield ev
                reason = cadence.due(ev)
                if reason and recorder is not None:
                    ck = await self._checkpoint(recorder, reason)
                    cadence.written()  # (None: this step has its checkpoint already)
                    if ck is not None:
                        yield ck
                if ev.kind == "eval" and self._samples_at_eval() and not self.control.stopping:
                    yield await sample(self.prep, o.sample_chars, self._stopping)
                if ev.get("step") is not None:
                    done = ev["step"]
                if self.control.paused and not self.control.stopping:
                    yield E.Paused(step=done)  # the pause has taken effect: say so
                    await self.control.wait_while_paused()
        except ScellisError:
            status = "failed"
            raise
        finally:
            await gen.aclose()
            if recorder is not None:
                recorder.finish(status)

    async def _ending(self, end: E.End, recorder):
        if recorder is not None:
            reason = (self.control.stop_reason or "stop") if end.stopped_by_user else "end"
            ck = await self._checkpoint(recorder, reason)
            if ck is not None:
                yield ck
        if end.stopped_by_user:
            yield E.Stopped(step=end.steps)
        # a generated text costs a forward pass per character: a stopped run ends now
        text = isinstance(self.prep.dataset, TextDataset)
        if self.options.samples and not (end.stopped_by_user and text):
            yield await sample(self.prep, self.options.sample_chars)
        end.run = self.rid
        yield end

    def _stopping(self) -> bool:
        return self.control.stopping

    def _samples_at_eval(self) -> bool:
        o = self.options
        is_text = isinstance(self.prep.dataset, TextDataset)
        return o.samples and (o.text_samples or not is_text)

    def _recorder(self) -> RunRecorder | None:
        if self.root is None:
            return None
        p, o = self.prep, self.options
        recorder = RunRecorder(
            ObjectStore(self.root, writer=self.seams.writer), Records(self.root), self.rid,
            record_hash=self.record_hash, dataset=p.digest, tier=p.tier, device=p.device,
            keep_last=o.keep_last, keep_best=o.keep_best, fault=self.seams.fault,
        )  # fmt: skip
        if self.restored is not None:
            recorder.last_step = self.ts.step  # its checkpoint is the one it resumed from
        return recorder

    async def _checkpoint(self, recorder: RunRecorder, reason: str) -> E.Checkpoint | None:
        h = await recorder.save(self.ts)
        if h is None:
            return None
        return E.Checkpoint(step=self.ts.step, manifest=h, reason=reason, run=self.rid)


class Cadence:
    """When the session checkpoints (see the module note)."""

    def __init__(self, session: RunSession):
        o, p = session.options, session.prep
        self.ts, self.every = session.ts, o.checkpoint_every
        self.seconds = o.checkpoint_minutes * 60.0
        self.last = time.monotonic()
        self.epoch_due = False
        # the run validates right after an epoch's end: checkpoint after that, not before
        validates = o.validate and p.val is not None
        self.eval_every = (o.eval_every or p.eval_every) if validates else None
        self.eval_follows_epoch = validates and self.eval_every is None
        self.held: str | None = None  # a log point's checkpoint, waiting for its eval

    def due(self, ev) -> str | None:
        if ev.kind == "epoch" and self.every is None:
            if not self.eval_follows_epoch:
                return "epoch"
            self.epoch_due = True
            return None
        if ev.kind not in ("log", "eval"):
            return None
        reason = self.held if ev.kind == "eval" else None
        if ev.kind == "log" and self.every is not None and self.ts.step % self.every == 0:
            reason = "every"
        reason = reason or ("epoch" if self.epoch_due else None)
        if reason is None and time.monotonic() - self.last >= self.seconds:
            reason = "time"
        if reason and ev.kind == "log" and self._eval_follows(ev.step):
            self.held, reason = reason, None  # after this step's validation, not before
        return reason

    def _eval_follows(self, step: int) -> bool:
        return self.eval_every is not None and step % self.eval_every == 0

    def written(self) -> None:
        self.last, self.epoch_due, self.held = time.monotonic(), False, None


# -- building a session --


def _plan_or_refuse(record: dict, dev, budget, o: RunOptions) -> tuple[E.Plan, RunOptions]:
    """The run's plan, and its options with replay off where only eager steps fit."""
    plan, replay = plan_steps(record, device=dev, budget=budget, replay=o.replay,
                              validate=o.validate)  # fmt: skip
    if plan.verdict == "red":
        raise PlanRefused(plan)  # before anything is allocated on the device
    return E.Plan(**plan.record()), replace(o, replay=replay)


def plan_event(record: dict, device, replay: bool = True, validate: bool = True,
               budget=None) -> E.Plan:  # fmt: skip
    """The memory plan of ``record`` on ``device`` (under ``budget``, else the device's
    own or declared one), whatever its verdict."""
    plan = plan_steps(record, device=get_device(device), budget=budget, replay=replay,
                      validate=validate)[0]  # fmt: skip
    return E.Plan(**plan.record())


def start_run(raw: bytes, label: str = "record.sml", *, options: RunOptions | None = None,
              device="reference", why: str = "", base_dir=".", store=None,
              budget: str | None = None, tier: str | None = None, argv=("(python)",),
              control: RunControl | None = None, seams: StoreSeams | None = None,
              trusted: bool = False) -> RunSession:  # fmt: skip
    """A new run of the record ``raw`` (see the module note). ``store``: the folder it
    is recorded in (None: not recorded, no checkpoints). ``tier`` replaces the record's
    determinism tier; ``why`` says how the device was picked. ``trusted``: ``raw`` is a
    file the user runs, whose ``extensions:`` may load code (from ``base_dir``)."""
    o = options or RunOptions()
    if o.extensions:  # named where the user is; kept absolute so a resume finds them
        o.extensions = [_absolute(e) for e in o.extensions]
        load_extensions(list(o.extensions))
    edits = o.record_edits()
    text = effective_record(raw, label, edits)
    try:
        record = check_record(text, label, base_dir=base_dir, trusted=trusted)
    except RecordProblems as e:
        raise RecordProblems(at_edits(e.problems, raw, text, label, edits)) from None
    if tier is not None:
        record = {**record, "determinism_tier": tier}
    dev = get_device(device)
    plan, o = _plan_or_refuse(record, dev, budget, o)
    weights = header_weights(text.decode("utf-8"), Path(store)) if store is not None else None
    prep = prepare_run(record, dev, base_dir=base_dir, weights=weights,
                       drop_last=o.drop_last, label=label)  # fmt: skip
    check_data_fits(record, prep.dataset, locator(text, label))
    _apply_options(prep, o, why)
    s = RunSession(prep, o, control=control or RunControl(), pending=[plan],
                   seams=seams or StoreSeams(), edits=[typed for *_, typed in edits],
                   baselines=baselines_of(prep))  # fmt: skip
    if store is not None:
        s.root = Path(store)
        s.rid, s.record_hash = _register(s, text, raw, base_dir, list(argv))
    return s


def _absolute(extension: str) -> str:
    """A path that exists, made absolute; a dotted module name as it is."""
    p = Path(extension)
    return str(p.resolve()) if p.exists() else extension


def baselines_of(prep) -> dict:
    """The naive baselines of the record's metrics on the run's validation windows."""
    ev = prep.record.get("eval") or {}
    if not (ev.get("metrics") or ev.get("baselines")):
        return {}
    return baselines(prep.dataset, ev.get("metrics") or [], ev.get("season"))


def _apply_options(prep, o: RunOptions, why: str) -> None:
    prep.why = why
    prep.limit_validation(o.val_rows)
    if not o.validate:
        prep.val = None
    # bitwise equal to eager, where the device can record a step (falls back per step)
    prep.replay = None if o.replay else False


def _register(s: RunSession, text: bytes, raw: bytes, base_dir, argv) -> tuple[str, str]:
    objects, records = ObjectStore(s.root), Records(s.root)
    try:
        p = s.prep
        source = (p.record.get("data") or {}).get("source")
        records.add_dataset(p.digest, str(source), p.rows)
        # the user's data file is kept with the run (by hash): a resume, here after the
        # file moved or in a tab from the run's bundle, reads that copy
        config: dict = {"options": s.options.to_config()}
        if s.baselines:
            config["baselines"] = s.baselines
        files = keep_data_files(objects, p.record, base_dir)
        if files:
            config["files"] = files
        if s.edits:
            config |= {"edits": s.edits, "source_hash": sha256_hex(raw)}
        return new_run(objects, records, text, p, config, argv=argv, base_dir=base_dir)
    finally:
        records.close()


def _is_running(row: dict) -> bool:
    return row["status"] == "running"


def resume_run(store, ref: str, *, overrides: dict | None = None, device=None,
               why: str = "", step: int | None = None, tier: str | None = None,
               is_live=_is_running, scratch=None, history: bool = False,
               control: RunControl | None = None, seams: StoreSeams | None = None,
               surface: str = "resume", budget=None) -> RunSession:  # fmt: skip
    """Continue run ``ref`` of ``store`` from its latest checkpoint that loads (or the
    one at ``step``): its record from the store, its stored options with ``overrides``,
    its kept data files written out under ``scratch`` (default: the store's
    ``files/RUN``) and re-hashed against the run's, on ``device`` (default: the run's)
    and its tier (or ``tier``); later metrics and checkpoints are dropped, except from a
    checkpoint older than the last: that starts a new run branching off (``restore``).
    ``is_live`` says whether a runs row is alive elsewhere; ``history`` hands back the
    stored curves; ``budget`` is the memory its plan is held to (as ``start_run``'s)."""
    root = Path(store)
    if not (root / "records.sqlite").exists():
        raise ScellisError(f"no store at {root} (train with --store {root} first)")
    objects, records = ObjectStore(root), Records(root)
    try:
        rid = records.resolve(ref)
        row = records.run(rid)
        config = row["config"]
        o = RunOptions.from_mapping(overrides or {}, base=RunOptions.from_config(config),
                                    where=surface)  # fmt: skip
        _check_resumable(rid, row, is_live, step, (overrides or {}).get("max_steps"))
        _load_named_extensions(rid, o, overrides or {})
        base_dir = config.get("base_dir", ".")
        record = check_record(objects.get(row["record_hash"]), config["label"],
                              base_dir=base_dir)  # fmt: skip
        record = {**record, "determinism_tier": tier or row["tier"] or record.get(
            "determinism_tier")}  # fmt: skip
        files = config.get("files") or {}
        missing = runfiles.unkept(record, files)
        if missing:
            raise ScellisError(
                f"run {rid} keeps no copy of its data file {shown(missing[0], 60)}, and a "
                "stored run's paths are not read: train it again from its record"
            )
        if files:
            folder = Path(scratch) if scratch is not None else root / "files" / rid
            record = runfiles.with_local_data(
                record, runfiles.local_sources(objects, files, folder)
            )
        dev = get_device(device or row["device"])
        plan, o = _plan_or_refuse(record, dev, budget, o)
        prep = prepare_run(record, dev, base_dir=base_dir,
                           epochs=legacy_epochs(config), drop_last=o.drop_last,
                           label=config["label"])  # fmt: skip
        _apply_options(prep, o, why)
        back = restore(objects, records, rid, prep, max_steps=o.max_steps, epochs=prep.epochs,
                       step=step)  # fmt: skip
        rid = back.run  # a branch from an older checkpoint is a new run
        stored = RunOptions.from_config(config)
        if o.max_steps != stored.max_steps:
            # the run now goes to this max steps: the list and the next resume read it back
            records.set_options(rid, {**stored.to_config(), "max_steps": o.max_steps})
        pending: list = [E.Resume(run=rid, step=prep.ts.step, skipped=back.skipped,
                                  parent=back.parent)]  # fmt: skip
        if history:
            curves = {n: [list(p) for p in records.metrics(rid, n)[-HISTORY_POINTS:]]
                      for n in ("loss", "val_loss", "lr")}  # fmt: skip
            pending.append(E.History(run=rid, metrics=curves))
    finally:
        records.close()
    return RunSession(prep, o, control=control or RunControl(), root=root, rid=rid,
                      record_hash=row["record_hash"], pending=[*pending, plan], restored=back,
                      seams=seams or StoreSeams(), baselines=baselines_of(prep))  # fmt: skip


def _load_named_extensions(rid: str, o: RunOptions, overrides: dict) -> None:
    """Load the extensions named for this resume; a stored run's own list (which a run
    bundle from anyone may carry) never loads by itself: it is refused with the flag."""
    named = list(overrides.get("extensions") or ())
    if named:
        load_extensions(named)
        o.extensions = [_absolute(e) for e in named]
    elif o.extensions:
        names = ", ".join(shown(Path(str(e)).name, 60) for e in list(o.extensions)[:3])
        raise ScellisError(
            f"run {rid} was trained with extensions ({names}); Scellis loads no code that a "
            "stored run names: if you trust it, pass --extensions PATH to this command"
        )


def _check_resumable(rid: str, row: dict, is_live, step, max_steps) -> None:
    if is_live(row):
        pid, host = row.get("pid"), row.get("host")
        where = f" (pid {pid} on {host})" if pid and host else ""
        raise ScellisError(f"run {rid} is still running{where}")
    if row["status"] == "done" and step is None and max_steps is None:
        raise ScellisError(
            f"run {rid} is done at step {row['step']}; --to-step N continues it further "
            "while its record's epochs last"
        )
