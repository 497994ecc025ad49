"""Step replay (runtime layer): record a step twice, prove the traces agree, then replay.

``StepReplay`` drives one repeated step (an inference forward, a training step).
After ``warmup`` plain eager runs it records the next two eager runs (each a
``Trace`` of every primitive, launch, upload and readback) and compares them entry
by entry. Replay is sound only when the second step did exactly what the first did
up to its inputs, so the comparison refuses, with the reason kept in ``reason``:

- any readback inside the step (the host deciding something from device values);
- a different count or order of primitives, or other shapes, strides or dtypes
  (data-dependent shapes);
- attrs that change between steps outside the ops named ``patched`` and the random
  ops (a host value baked into a kernel: a Python-side loss scale);
- random ops that do not pair up with the step's draws from the host's Philox
  streams (runtime.replay_draws), which is how a replay advances those streams;
- different upload payloads;
- a buffer that differs between the two steps and is neither made inside the step
  (at the same position in both) nor one of the declared step inputs (``feeds``):
  state the step rebinds to new tensors instead of updating in place.

When the traces agree, the second becomes a prepared ``Schedule``; ``replay`` copies
the new inputs into the recorded input buffers, re-encodes the random ops with the
counters their streams hand out now, and runs it. Results are bitwise
those of the eager step: the same kernels read the same values in the same order.
A device without a dispatch list (the NumPy reference) cannot replay; ``reason``
says so and the caller stays eager.
"""

from __future__ import annotations

import contextlib

from ..devices.webgpu.replay import Schedule, Trace
from .dispatch import apply
from .replay_draws import (
    fixed_attrs,
    fixed_meta,
    noting_draws,
    replay_counters,
    same_draws,
    unpaired,
)


def can_record(device) -> bool:
    """Whether ``device`` keeps a dispatch list a step can be recorded from and replayed."""
    return hasattr(device, "recorder") and hasattr(device, "encode")


class StepReplay:
    def __init__(self, device, patched=frozenset(), warmup: int = 1, retries: int = 2):
        self.device = device
        # a failed comparison is retried on the next pair of steps this many times
        # (a first-use constant or a lazily made buffer can differ once and never again)
        self.retries = retries
        self.patched = frozenset(patched)
        self.warmup = warmup
        self.reason = ""
        if not can_record(device):
            self.reason = (
                f"device {device.name!r} runs its kernels directly from Python: "
                "it has no dispatch list to record"
            )
        self.runs = 0  # eager runs seen
        self.traces: list = []
        self.schedule: Schedule | None = None
        self.feed_views: list = []
        self.draw_plan: list = []  # where each random op's counter comes from, in step order

    @property
    def ready(self) -> bool:
        return self.schedule is not None and not self.reason

    def fits(self, feeds) -> str:
        """Why ``feeds`` cannot go through the schedule ('' when they can)."""
        if len(feeds) != len(self.feed_views):
            return f"the step takes {len(self.feed_views)} inputs, {len(feeds)} given"
        for t, v in zip(feeds, self.feed_views):
            if tuple(t.shape) != tuple(v.shape) or t.dtype != v.dtype:
                return (
                    f"an input of shape {tuple(t.shape)} {t.dtype}; the recorded step "
                    f"took {tuple(v.shape)} {v.dtype} (a data-dependent shape)"
                )
        return ""

    def _due(self, feeds) -> bool:
        due = not self.reason and self.schedule is None and self.runs >= self.warmup
        if due and self.traces and _shapes(self.traces[0][1]) != _shapes(feeds):
            return False  # an odd-shaped step (a short last batch) is not compared, only run
        return due

    def stage(self, feeds) -> list:
        """The tensors the next eager run should take: copies when it will be traced.

        A traced run's inputs become the schedule's input buffers, which every replay
        overwrites, so they must be the schedule's own, never the caller's tensors."""
        if not self._due(feeds):
            return list(feeds)
        return [apply("copy", (t,)) for t in feeds]

    @contextlib.contextmanager
    def eager(self, feeds):
        """Wrap one eager run of the step on ``feeds`` (from ``stage``); it is recorded
        while traces are still due."""
        if not self._due(feeds):
            self.runs += 1
            yield
            return
        trace = Trace(self.device)
        self.device.recorder = trace
        try:
            with noting_draws() as draws:
                yield
        except BaseException:
            self.device.disown(trace)  # a step that failed gives its storage back
            raise
        finally:
            self.device.recorder = None
        self.runs += 1
        self.traces.append((trace, [t.device_view for t in feeds], draws))
        if len(self.traces) == 1:
            # only its entries are compared: the next recorded step may reuse its storage
            self.device.disown(trace)
            return
        (a, fa, da), (b, fb, db) = self.traces
        why = self._compare(a, b, fa, fb, da, db)
        if not why:
            self.traces = []
            self.schedule = Schedule(self.device, b, self.patched)
            self.feed_views = fb
            self.draw_plan = db.plan
            return
        self.device.disown(b)
        if self.retries > 0:
            self.retries -= 1
            self.traces = [(b, fb, db)]
        else:
            self.traces = []
            self.reason = why

    def _compare(self, a, b, fa, fb, da, db) -> str:
        why = compare(a, b, fa, fb, self.patched)
        why = why or unpaired(a.entries, da) or unpaired(b.entries, db)
        if not why and not same_draws(da, db):
            why = "the step's random ops draw from other Philox streams each step"
        return why

    def replay(self, feeds, patches: list | None = None) -> None:
        """Run the recorded step on ``feeds`` (same shapes as recorded; see ``fits``);
        ``patches`` are the new attrs of the ``patched`` ops, in step order."""
        for t, v in zip(feeds, self.feed_views):
            if t._buf is not v.buf:
                self.device.run("copy", [t.device_view], [v], {})
        # the streams advance here, as the eager step's draws would advance them
        self.schedule.run(patches, replay_counters(self.draw_plan))

    def close(self) -> None:
        if self.schedule is not None:
            self.schedule.release()
            self.schedule = None


def _shapes(feeds) -> list:
    return [(tuple(t.shape), t.dtype) for t in feeds]


def _first_made(trace: Trace) -> dict:
    """Buffer id -> (entry, slot) where the trace first writes it (output or upload)."""
    made: dict = {}
    for i, e in enumerate(trace.entries):
        for k, v in enumerate(e.outs, start=len(e.ins)):
            made.setdefault(id(v.buf), (i, k))
    return made


def _geometry(e) -> list:
    return [(tuple(v.shape), tuple(v.strides), v.offset, v.dtype.name) for v in e.views]


def _launches(e) -> list:
    return [(x.pipeline, x.grid, fixed_meta(e.op, x.meta)) for x in e.launches]


def compare(a: Trace, b: Trace, feeds_a, feeds_b, patched) -> str:
    """'' when trace ``b`` repeats ``a`` up to its inputs; else why it does not."""
    if a.reads or b.reads:
        return "the step reads device values on the host (a host-side decision inside the step)"
    if len(a.entries) != len(b.entries):
        return (
            f"the step ran {len(a.entries)} primitives, then {len(b.entries)}: "
            "its work depends on host-side state"
        )
    made_a, made_b = _first_made(a), _first_made(b)
    feed_a = {id(v.buf): k for k, v in enumerate(feeds_a)}
    feed_b = {id(v.buf): k for k, v in enumerate(feeds_b)}
    for i, (ea, eb) in enumerate(zip(a.entries, b.entries)):
        where = f"primitive #{i} ({eb.op})"
        if ea.op != eb.op:
            return f"primitive #{i} was {ea.op}, then {eb.op}: the step's ops change"
        if _geometry(ea) != _geometry(eb):
            return f"{where}: shapes or layouts change between steps"
        if ea.data != eb.data:
            return f"{where}: the host uploads other data each step"
        xa, xb = fixed_attrs(ea.op, ea.attrs), fixed_attrs(eb.op, eb.attrs)
        if xa != xb and eb.op not in patched:
            keys = sorted(k for k in set(xa) | set(xb) if xa.get(k) != xb.get(k))
            return (
                f"{where}: attrs {', '.join(keys)} change between steps "
                "(a host-side value the kernel bakes in, e.g. a Python-side loss scale)"
            )
        if eb.op not in patched and _launches(ea) != _launches(eb):
            return f"{where}: its launches differ between steps"
        for va, vb in zip(ea.views, eb.views):
            x, y = va.buf, vb.buf
            if x is y:
                continue
            if id(y) in feed_b and feed_a.get(id(x)) == feed_b[id(y)]:
                continue
            pa, pb = made_a.get(id(x)), made_b.get(id(y))
            if pa is not None and pa == pb:
                continue
            return (
                f"{where} uses a buffer that changes between steps and is neither made inside "
                "the step nor a step input (state rebound to new tensors instead of updated "
                "in place)"
            )
    return ""


class ReplayedFunction:
    """``fn(*inputs)`` (an inference forward) replayed once two traced calls agree.

    A replayed call returns the recorded call's output tensor, whose buffer each replay
    rewrites: read it before the next call. Calls that cannot replay (another input
    shape, a refused trace: see ``reason``) run ``fn`` eagerly.
    """

    def __init__(self, fn, device, warmup: int = 1, retries: int = 2):
        self.fn = fn
        self.sr = StepReplay(device, warmup=warmup, retries=retries)
        self.out = None

    @property
    def reason(self) -> str:
        return self.sr.reason

    @property
    def ready(self) -> bool:
        return self.sr.ready

    def __call__(self, *inputs):
        feeds = list(inputs)
        if self.sr.ready and not self.sr.fits(feeds):
            self.sr.replay(feeds)
            return self.out
        was_ready = self.sr.ready
        staged = self.sr.stage(feeds)
        with self.sr.eager(staged):
            out = self.fn(*staged)
        if not was_ready:
            self.out = out  # the last traced call's output is the one replays rewrite
        return out
