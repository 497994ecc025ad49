"""Recorded dispatch schedules on WebGPU (devices layer): trace a step, replay it prepared.

A ``Trace`` is attached to the backend (``backend.recorder``) while a step runs
eagerly; it keeps, in order, every primitive the step ran (op, attrs, the input and
output views) with the launches it made (pipeline, bound windows, meta words, grid),
every host upload, and counts readbacks.

Storage: every storage the backend allocates while a trace records is the trace's
(``Storage.owner``). When one of the step's buffers dies, its storage goes to the
trace's own free list instead of the pool, and a later allocation of the same step
takes it from there: the recorded step reuses memory by liveness, as an eager step
does, so a schedule holds about the eager step's peak, not the sum of everything it
made. No storage a schedule writes is ever handed to another tensor, because none of
the trace's storages reach the pool while the trace owns them
(``backend.disown`` gives them back). The views of buffers made in the step are kept
as stand-ins that hold the storage but not the buffer (so the buffer can die); a
buffer made before the step (a parameter, a step input, a cached constant) is held,
so the schedule's bindings of it stay valid whatever its owner does with it.

A ``Schedule`` turns a trace into prepared dispatches: each launch gets a private
meta buffer and a bind group made once, and ``run`` encodes set-pipeline /
set-bind-group / dispatch for each, with no kernel builder, no meta lookup and no
bind-group cache lookup per op. Launches of the ops named ``patched`` (the optimizer
updates, whose learning rate and step count are kernel scalars) are re-encoded each
run from the attrs the host passes, and the re-encoded launch must be the same
pipeline and grid, or the run is refused. Their meta words go to a ring of
PATCH_RING slots, each with its bind groups made once: a run writes its words into the
next slot with a queue write. A queue write runs before the commands of the next
submission, so it must not land in a slot that work still encoded (not submitted)
reads: that slot is written only once the GPU's submission count has moved past the
run that last used it, or after a submission forced then (a step of few dispatches,
many steps to an encoder). The random ops' launches (dropout masks, any Philox draw)
read their meta words from one counter table of the schedule, each at its own offset;
a run writes every launch's words with the counter its stream hands out into that
table with one queue write before it encodes its dispatches (the write is ordered
after the previous run's work), so they stay plain prepared dispatches.
"""

from __future__ import annotations

import array
import weakref
from dataclasses import dataclass, field

from ...base.errors import DeviceError
from ...ops.table import OPS
from ..base import Buffer, View
from .kernels.optim import rescalable, rescaled_meta
from .kernels.random import with_counter

# bytes between two launches' words in the counter table and the patch ring: the
# largest offset alignment WebGPU lets an adapter ask of a storage binding
COUNTER_STRIDE = 256
# runs' meta words of the patched launches that can be queued at once: a slot is reused
# after this many runs, with a submission first where the last run to read it is still
# encoded (at most 512 dispatches are encoded between submissions)
PATCH_RING = 8


def is_random(op: str) -> bool:
    """Whether ``op`` draws from a Philox stream (its counter is a meta word)."""
    d = OPS.get(op)
    return d is not None and d.family == "random"


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
    """What one eagerly run step did on the backend, in order, and the storages it made."""

    def __init__(self, backend=None):
        self.entries: list[Entry] = []
        self.reads = 0
        self._keep: dict[int, object] = {}  # id -> Buffer made before the step: held
        # a buffer made in the step -> its stand-in (one each, so identity is kept)
        self._made: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.owned: list = []  # the storages this trace made
        self.free: dict[int, list] = {}  # size class -> owned storages no buffer holds
        # a storage names its trace weakly, so a trace nobody keeps (a schedule dropped
        # without release) dies at once, and its storages go back to the pool then
        self.ref = weakref.ref(self)
        if backend is not None:
            weakref.finalize(self, backend.disown_storage, self.owned, self.free)

    # -- storage (called by the backend's allocator) --
    def claim(self, st) -> None:
        st.owner = self.ref
        self.owned.append(st)

    def let_go(self, st) -> None:
        self.free.setdefault(st.pool_key, []).append(st)

    def reuse(self, key: int):
        free = self.free.get(key)
        return free.pop() if free else None

    # -- what the step did --
    def _recorded(self, view):
        buf = view.buf
        if getattr(buf.handle, "owner", None) is not self.ref:
            self._keep.setdefault(id(buf), buf)
            return view
        stand_in = self._made.get(buf)
        if stand_in is None:
            # no backend: a stand-in's end releases nothing
            stand_in = self._made[buf] = Buffer(None, buf.handle, buf.numel, buf.dtype)
        return View(stand_in, view.shape, view.strides, view.offset, view.dtype)

    def on_run(self, op, ins, outs, attrs) -> None:
        ins, outs = [self._recorded(v) for v in ins], [self._recorded(v) for v in outs]
        self.entries.append(Entry(op, dict(attrs), ins, outs))

    def on_launch(self, pipeline, src, grid) -> None:
        e = self.entries[-1]
        e.launches.append(Launch(pipeline, list(src.bindings), list(src.meta), tuple(grid)))

    def on_upload(self, buf, data: bytes) -> None:
        whole = View(buf, (buf.numel,), (1,), 0, buf.dtype)
        self.entries.append(Entry("<upload>", {}, [], [self._recorded(whole)], data=bytes(data)))

    def on_read(self, buf) -> None:
        self.reads += 1


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
        # (random op's index, launch) of each launch reading the counter table, in order
        self.counted: list[tuple[int, Launch]] = []
        randoms = [e for e in trace.entries if is_random(e.op)]
        table = self._counter_table(randoms)
        shared: dict[bytes, object] = {}
        for e in trace.entries:
            if e.op == "<upload>":
                self.items.append(("u", e.outs[0].buf, e.data))
                continue
            if e.op in patched:
                self.items.extend(("p", len(self.patch_slots), j) for j in range(len(e.launches)))
                self.patch_slots.append(e)
                continue
            if is_random(e.op):
                for ln in e.launches:
                    at = len(self.counted) * COUNTER_STRIDE
                    self.counted.append((randoms.index(e), ln))
                    self.items.append(("d", ln.pipeline, self._group(ln, table, at), ln.grid))
                continue
            for ln in e.launches:
                words = array.array("I", ln.meta or [0]).tobytes()
                mb = shared.get(words)
                if mb is None:
                    mb = shared[words] = self.gpu.create_buffer(len(words), data=words)
                    self.meta_buffers.append(mb)
                self.items.append(("d", ln.pipeline, self._group(ln, mb), ln.grid))
        self.counter_table = table
        self._init_patch_ring()
        self.draws = len(randoms)
        self.dispatches = sum(1 for it in self.items if it[0] != "u")
        self.runs = _runs(self.items)

    def _counter_table(self, randoms: list):
        """The buffer the random launches read their meta from (None without any), made
        holding the recorded words."""
        launches = [ln for e in randoms for ln in e.launches]
        if not launches:
            return None
        table = self.gpu.create_buffer(
            len(launches) * COUNTER_STRIDE, data=_table_bytes([ln.meta for ln in launches])
        )
        self.meta_buffers.append(table)
        return table

    def _write_counters(self, counters: list) -> None:
        """This run's counters, one (key, draw, step) per random op in step order, into
        the table: one queue write, ordered after the work already encoded."""
        if len(counters) != self.draws:
            raise DeviceError(f"this schedule draws {self.draws} times; {len(counters)} given")
        metas = [with_counter(ln.meta, *counters[k]) for k, ln in self.counted]
        self.gpu.write_buffer(self.counter_table, 0, _table_bytes(metas))

    def _group(self, ln: Launch, meta_buffer, offset: int = 0):
        bindings = list(ln.bindings) + [(meta_buffer, offset, max(4, len(ln.meta) * 4))]
        bind = getattr(self.gpu, "bind_group", None)
        return bind(ln.pipeline, bindings) if bind is not None else bindings

    def _init_patch_ring(self) -> None:
        """The ring the patched launches read their meta words from: PATCH_RING slots of
        one COUNTER_STRIDE-spaced word list per launch, each slot with its bind groups."""
        launches = [ln for e in self.patch_slots for ln in e.launches]
        self.patch_ring, self.ring_groups = None, []
        self._ring_next, self._ring_used = 0, [-1] * PATCH_RING
        if not launches:
            return
        slot = _packed_words([ln.meta for ln in launches])
        self.patch_ring = self.gpu.create_buffer(PATCH_RING * len(slot), data=slot * PATCH_RING)
        self.meta_buffers.append(self.patch_ring)
        self._slot_bytes = len(slot)
        starts = _word_offsets([ln.meta for ln in launches])
        for r in range(PATCH_RING):
            at, groups = iter(starts), []
            for e in self.patch_slots:
                base = r * len(slot)
                groups.append(
                    [self._group(ln, self.patch_ring, base + next(at)) for ln in e.launches]
                )
            self.ring_groups.append(groups)

    def _patched_meta(self, e: Entry, attrs: dict) -> list[list]:
        """The meta words of ``e``'s launches under ``attrs``: the recorded ones with the
        scalars rewritten where only scalar attrs differ from the recording's (an
        optimizer's learning rate and step), else re-encoded and checked."""
        if rescalable(e.op, e.attrs, attrs):
            return [rescaled_meta(e.op, attrs, ln.meta) for ln in e.launches]
        launches = self.backend.encode(e.op, e.ins, e.outs, attrs)
        if len(launches) != len(e.launches):
            raise DeviceError(f"{e.op}: re-encoded with other attrs, it launches differently")
        metas = []
        for (src, grid), old in zip(launches, e.launches):
            same = self.backend.pipeline(src.text()) is old.pipeline
            if not same or tuple(grid) != old.grid or len(src.meta) != len(old.meta):
                raise DeviceError(f"{e.op}: the new attrs change its kernel, not only scalars")
            metas.append(src.meta)
        return metas

    def _ring_writer(self, r: int):
        """The queue write for slot ``r``: one that submits the encoded work first where
        the last run to read the slot is still among it."""
        if self._ring_used[r] == self.gpu.submissions:
            return self.gpu.write_buffer
        return self.gpu.write_unread

    def _patched_groups(self, patches: list[dict]) -> list[list]:
        """Bind groups of the patched launches for this run's attrs: their re-encoded
        meta words written into the ring's next slot."""
        if len(patches) != len(self.patch_slots):
            raise DeviceError(
                f"this schedule re-encodes {len(self.patch_slots)} ops; {len(patches)} attrs given"
            )
        if self.patch_ring is None:
            return []
        metas = []
        for e, attrs in zip(self.patch_slots, patches):
            metas += self._patched_meta(e, attrs)
        r = self._ring_next
        self._ring_next = (r + 1) % PATCH_RING
        self._ring_writer(r)(self.patch_ring, r * self._slot_bytes, _packed_words(metas))
        self._ring_used[r] = self.gpu.submissions
        return self.ring_groups[r]

    def run(self, patches: list[dict] | None = None, counters: list | None = None) -> None:
        """Replay every launch; ``patches`` are the new attrs of the patched ops, in order,
        ``counters`` the Philox counter (key, draw, step) of each random op, in order."""
        fresh = self._patched_groups(patches or [])
        if self.counter_table is not None:
            self._write_counters(counters or [])
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
        """Free the private meta buffers, give the step's storages back to the pool and
        drop the recorded tensors now."""
        self.gpu.flush()
        for mb in self.meta_buffers:
            self.gpu.destroy_buffer(mb)
        self.meta_buffers, self.items, self.runs, self.patch_slots = [], [], [], []
        self.counted, self.counter_table = [], None
        self.backend.disown(self.trace)
        self.trace = Trace()


def _word_offsets(metas: list) -> list[int]:
    """Byte offsets of word lists laid end to end, each at a multiple of COUNTER_STRIDE."""
    out, at = [], 0
    for meta in metas:
        out.append(at)
        at += -(-max(4, len(meta) * 4) // COUNTER_STRIDE) * COUNTER_STRIDE
    return out + [at]


def _packed_words(metas: list) -> bytes:
    """Word lists at their ``_word_offsets``, padded to the last one's end."""
    ends = _word_offsets(metas)
    out = bytearray(ends[-1])
    for meta, at in zip(metas, ends):
        words = array.array("I", meta or [0]).tobytes()
        out[at : at + len(words)] = words
    return bytes(out)


def _table_bytes(metas: list) -> bytes:
    """Meta word lists laid out COUNTER_STRIDE bytes apart."""
    out = bytearray()
    for meta in metas:
        words = array.array("I", meta or [0]).tobytes()
        out += words + bytes(COUNTER_STRIDE - len(words))
    return bytes(out)
