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
run from the attrs the host passes: only their meta words are rewritten, and the
re-encoded launch must be the same pipeline and grid, or the run is refused.
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


class Schedule:
    """A trace's launches, prepared once and replayed in order."""

    def __init__(self, backend, trace: Trace, patched: frozenset = frozenset()):
        self.backend, self.gpu = backend, backend.gpu
        self.trace = trace  # holds the buffers
        self.patched = patched
        self.items: list = []  # ("d", pipeline, group, grid) | ("u", Buffer, bytes)
        self.patch_slots: list = []  # (Entry, [meta gpu buffer per launch])
        self.meta_buffers: list = []
        shared: dict[bytes, object] = {}
        bind = getattr(self.gpu, "bind_group", None)
        for e in trace.entries:
            if e.op == "<upload>":
                self.items.append(("u", e.outs[0].buf, e.data))
                continue
            own = e.op in patched
            metas = []
            for ln in e.launches:
                words = array.array("I", ln.meta or [0]).tobytes()
                mb = None if own else shared.get(words)
                if mb is None:
                    mb = self.gpu.create_buffer(len(words), data=words)
                    self.meta_buffers.append(mb)
                    if not own:
                        shared[words] = mb
                metas.append(mb)
                bindings = list(ln.bindings) + [(mb, 0, max(4, len(ln.meta) * 4))]
                group = bind(ln.pipeline, bindings) if bind is not None else bindings
                self.items.append(("d", ln.pipeline, group, ln.grid))
            if own:
                self.patch_slots.append((e, metas))
        self.dispatches = sum(1 for it in self.items if it[0] == "d")

    def run(self, patches: list[dict] | None = None) -> None:
        """Replay every launch; ``patches`` are the new attrs of the patched ops, in order."""
        patches = patches or []
        if len(patches) != len(self.patch_slots):
            raise DeviceError(
                f"this schedule re-encodes {len(self.patch_slots)} ops; {len(patches)} attrs given"
            )
        for (e, metas), attrs in zip(self.patch_slots, patches):
            launches = self.backend.encode(e.op, e.ins, e.outs, attrs)
            if len(launches) != len(e.launches):
                raise DeviceError(f"{e.op}: re-encoded with other attrs, it launches differently")
            for (src, grid), old, mb in zip(launches, e.launches, metas):
                same = self.backend.pipeline(src.text()) is old.pipeline
                if not same or tuple(grid) != old.grid or len(src.meta) != len(old.meta):
                    raise DeviceError(f"{e.op}: the new attrs change its kernel, not only scalars")
                self.gpu.write_buffer(mb, 0, array.array("I", src.meta or [0]).tobytes())
        direct = getattr(self.gpu, "dispatch_group", None)
        for item in self.items:
            if item[0] == "d":
                _, pipeline, group, grid = item
                if direct is not None:
                    direct(pipeline, group, grid)
                else:
                    self.gpu.dispatch(pipeline, group, grid)
            else:
                self.backend.upload(item[1], item[2])
        self.backend.stats["dispatches"] += self.dispatches
        self.gpu.flush()

    def release(self) -> None:
        """Free the private meta buffers (the traced tensors go when the trace does)."""
        self.gpu.flush()
        for mb in self.meta_buffers:
            self.gpu.destroy_buffer(mb)
        self.meta_buffers, self.items, self.patch_slots = [], [], []
        self.trace = Trace()  # drop the recorded tensors now, not at the next collection
