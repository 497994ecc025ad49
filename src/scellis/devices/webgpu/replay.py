"""Recorded dispatch schedules on WebGPU (devices layer): trace a step, replay it prepared.

A ``Trace`` is attached to the backend (``backend.recorder``) while a step runs
eagerly; it keeps, in order, every primitive the step ran (op, attrs, the input and
output views) with the launches it made (pipeline, bound windows, meta words, grid),
every host upload, and counts readbacks. It also holds every Buffer it saw, so none
of them returns to the pool: the storages a recorded step used stay the step's own.

A ``Schedule`` turns a trace into prepared dispatches: each launch gets a private
meta buffer and a bind group made once, and ``run`` encodes set-pipeline /
set-bind-group / dispatch for each, with no kernel builder, no meta lookup and no
bind-group cache lookup per op. Launches of the ops named ``patched`` (the optimizer
updates, whose learning rate and step count are kernel scalars) are re-encoded each
run from the attrs the host passes: they get fresh meta words (a new small buffer and
bind group per run), and the re-encoded launch must be the same pipeline and grid,
or the run is refused.
"""

from __future__ import annotations

import array
from dataclasses import dataclass, field

from ...base.errors import DeviceError


@dataclass
class Launch:
    pipeline: object
    bindings: list  # (gpu buffer, byte offset, byte size) of the tensors, meta excluded
    meta: list[int]
    grid: tuple


@dataclass
class Entry:
    """One primitive of a recorded step, or one host upload (op ``"<upload>"``)."""

    op: str
    attrs: dict
    ins: list
    outs: list
    launches: list = field(default_factory=list)
    data: bytes = b""

    @property
    def views(self) -> list:
        return list(self.ins) + list(self.outs)


class Trace:
    """What one eagerly run step did on the backend, in order."""

    def __init__(self):
        self.entries: list[Entry] = []
        self.reads = 0
        self._keep: dict[int, object] = {}  # id -> Buffer: held so no storage is recycled

    def _hold(self, views) -> None:
        for v in views:
            self._keep.setdefault(id(v.buf), v.buf)

    def on_run(self, op, ins, outs, attrs) -> None:
        self._hold(list(ins) + list(outs))
        self.entries.append(Entry(op, dict(attrs), list(ins), list(outs)))

    def on_launch(self, pipeline, src, grid) -> None:
        e = self.entries[-1]
        e.launches.append(Launch(pipeline, list(src.bindings), list(src.meta), tuple(grid)))

    def on_upload(self, buf, data: bytes) -> None:
        self._keep.setdefault(id(buf), buf)
        self.entries.append(Entry("<upload>", {}, [], [_Whole(buf)], data=bytes(data)))

    def on_read(self, buf) -> None:
        self.reads += 1


@dataclass(frozen=True)
class _Whole:
    """An upload's target, shaped like a view (the whole buffer)."""

    buf: object

    @property
    def shape(self):
        return (self.buf.numel,)

    strides = (1,)
    offset = 0

    @property
    def dtype(self):
        return self.buf.dtype


class DispatchRun:
    """Consecutive plain dispatches of a schedule: ("d", pipeline, group, grid) items. A
    GPU with ``dispatch_run`` encodes them in one call (a browser's, where each call
    into JavaScript costs microseconds) and keeps its own form of them in ``prepared``."""

    def __init__(self, items: list):
        self.items = items
        self.prepared = None


def _runs(items: list) -> list:
    """``items`` with each stretch of consecutive dispatches gathered in a DispatchRun."""
    out: list = []
    for item in items:
        if item[0] != "d":
            out.append(item)
        elif out and isinstance(out[-1], DispatchRun):
            out[-1].items.append(item)
        else:
            out.append(DispatchRun([item]))
    return out


class Schedule:
    """A trace's launches, prepared once and replayed in order."""

    def __init__(self, backend, trace: Trace, patched: frozenset = frozenset()):
        self.backend, self.gpu = backend, backend.gpu
        self.trace = trace  # holds the buffers
        self.patched = patched
        # ("d", pipeline, group, grid) | ("u", Buffer, bytes) | ("p", slot, launch)
        self.items: list = []
        self.patch_slots: list[Entry] = []
        self.meta_buffers: list = []
        shared: dict[bytes, object] = {}
        for e in trace.entries:
            if e.op == "<upload>":
                self.items.append(("u", e.outs[0].buf, e.data))
                continue
            if e.op in patched:
                self.items.extend(("p", len(self.patch_slots), j) for j in range(len(e.launches)))
                self.patch_slots.append(e)
                continue
            for ln in e.launches:
                words = array.array("I", ln.meta or [0]).tobytes()
                mb = shared.get(words)
                if mb is None:
                    mb = shared[words] = self.gpu.create_buffer(len(words), data=words)
                    self.meta_buffers.append(mb)
                self.items.append(("d", ln.pipeline, self._group(ln, mb), ln.grid))
        self.dispatches = sum(1 for it in self.items if it[0] != "u")
        self.runs = _runs(self.items)

    def _group(self, ln: Launch, meta_buffer):
        bindings = list(ln.bindings) + [(meta_buffer, 0, max(4, len(ln.meta) * 4))]
        bind = getattr(self.gpu, "bind_group", None)
        return bind(ln.pipeline, bindings) if bind is not None else bindings

    def _patched_groups(self, patches: list[dict]) -> list[list]:
        """Bind groups of the patched launches for this run's attrs. Each run gets fresh
        meta buffers (created holding their words): rewriting one in place would have
        to wait for the previous run's queued dispatches, i.e. force a submission."""
        if len(patches) != len(self.patch_slots):
            raise DeviceError(
                f"this schedule re-encodes {len(self.patch_slots)} ops; {len(patches)} attrs given"
            )
        out = []
        for e, attrs in zip(self.patch_slots, patches):
            launches = self.backend.encode(e.op, e.ins, e.outs, attrs)
            if len(launches) != len(e.launches):
                raise DeviceError(f"{e.op}: re-encoded with other attrs, it launches differently")
            groups = []
            for (src, grid), old in zip(launches, e.launches):
                same = self.backend.pipeline(src.text()) is old.pipeline
                if not same or tuple(grid) != old.grid or len(src.meta) != len(old.meta):
                    raise DeviceError(f"{e.op}: the new attrs change its kernel, not only scalars")
                words = array.array("I", src.meta or [0]).tobytes()
                groups.append(self._group(old, self.gpu.create_buffer(len(words), data=words)))
            out.append(groups)
        return out

    def run(self, patches: list[dict] | None = None) -> None:
        """Replay every launch; ``patches`` are the new attrs of the patched ops, in order."""
        fresh = self._patched_groups(patches or [])
        direct = getattr(self.gpu, "dispatch_group", None)
        send = direct if direct is not None else self.gpu.dispatch
        batch = getattr(self.gpu, "dispatch_run", None)
        for item in self.runs:
            if isinstance(item, DispatchRun):
                if batch is not None:
                    batch(item)
                    continue
                for _, pipeline, group, grid in item.items:
                    send(pipeline, group, grid)
                continue
            kind = item[0]
            if kind == "p":
                e = self.patch_slots[item[1]]
                send(
                    e.launches[item[2]].pipeline, fresh[item[1]][item[2]], e.launches[item[2]].grid
                )
            else:
                self.backend.upload(item[1], item[2])
        # no flush: like eager work, the dispatches stay encoded until the next
        # submission point (a write, a readback, or the 512-dispatch bound)
        self.backend.stats["dispatches"] += self.dispatches

    def release(self) -> None:
        """Free the private meta buffers and drop the recorded tensors now."""
        self.gpu.flush()
        for mb in self.meta_buffers:
            self.gpu.destroy_buffer(mb)
        self.meta_buffers, self.items, self.runs, self.patch_slots = [], [], [], []
        self.trace = Trace()
