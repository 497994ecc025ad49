"""The schedule rung (ir layer): dispatches in order, buffers assigned by liveness; print + verify.

Every launch of every kernel, in execution order, with the buffers it binds. Each
buffer lives from the first dispatch that writes it to the last that reads it;
parameters, optimizer state, gradients, inputs, cached constants and the outputs
live throughout. Buffers are packed into *slots* (storage of one pool size class,
the allocator's unit) first-fit by liveness, so two buffers share a slot only when
their lifetimes do not overlap. A replay executes this list; the memory planner
reads its buffer table. Values inside a fused kernel are not buffers and take none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..devices.webgpu.backend import size_class, storage_bytes
from .kernels import KernelGraph

PERSISTENT = ("param", "buffer", "grad", "state", "input")


@dataclass(frozen=True)
class Dispatch:
    kernel: int
    pipeline: str
    grid: tuple[int, int, int]
    reads: tuple[int, ...]
    writes: tuple[int, ...]


@dataclass
class Schedule:
    kernels: KernelGraph
    dispatches: list[Dispatch]
    slot_of: dict[int, int]  # buffer -> slot
    slot_bytes: list[int]
    live: dict[int, tuple[int, int]]  # buffer -> (first, last) dispatch; persistent: whole
    persistent: set[int] = field(default_factory=set)

    @property
    def bytes(self) -> int:
        return sum(self.slot_bytes)

    def text(self) -> str:
        g = self.kernels.graph
        lines = [
            f"# schedule: {g.title}",
            f"# {len(self.dispatches)} dispatches; {len(self.slot_of)} buffers in "
            f"{len(self.slot_bytes)} slots, {self.bytes} bytes",
            "slots:",
        ]
        members: dict[int, list[int]] = {}
        for b, s in self.slot_of.items():
            members.setdefault(s, []).append(b)
        for s, nbytes in enumerate(self.slot_bytes):
            bufs = " ".join(f"%{b}" for b in members.get(s, []))
            kind = " persistent" if any(b in self.persistent for b in members.get(s, [])) else ""
            lines.append(f"  s{s} {nbytes} B{kind}: {bufs}")
        lines.append("dispatches:")
        for i, d in enumerate(self.dispatches):
            w = ",".join(f"s{self.slot_of[b]}" for b in d.writes)
            r = ",".join(f"s{self.slot_of[b]}" for b in d.reads)
            lines.append(
                f"  {i:5d} k{d.kernel} {d.pipeline} grid {d.grid[0]}x{d.grid[1]}x{d.grid[2]}"
                f" write {w} read {r or '-'}"
            )
        return "\n".join(lines) + "\n"

    def verify(self) -> list[str]:
        problems = []
        by_slot: dict[int, list[int]] = {}
        for b, s in self.slot_of.items():
            by_slot.setdefault(s, []).append(b)
        for s, bufs in by_slot.items():
            for i, x in enumerate(bufs):
                for y in bufs[i + 1 :]:
                    (a0, a1), (b0, b1) = self.live[x], self.live[y]
                    if a0 <= b1 and b0 <= a1:
                        problems.append(f"slot s{s}: %{x} and %{y} are live at the same time")
        g = self.kernels.graph
        for b, s in self.slot_of.items():
            info = g.buffers[b]
            if size_class(storage_bytes(info.numel, info.dtype)) > self.slot_bytes[s]:
                problems.append(f"%{b} does not fit its slot s{s}")
        return problems


def schedule(kg: KernelGraph) -> Schedule:
    g = kg.graph
    dispatches: list[Dispatch] = []
    for ki, k in enumerate(kg.kernels):
        if k.fused:
            made = {n.outs[0].buf for n in k.ops}
            reads = tuple(dict.fromkeys(r.buf for n in k.ops for r in n.ins if r.buf not in made))
            writes = (k.out.buf,)
        else:
            reads = tuple(dict.fromkeys(r.buf for n in k.ops for r in n.ins))
            writes = tuple(dict.fromkeys(o.buf for n in k.ops for o in n.outs))
        for la in k.launches:
            dispatches.append(Dispatch(ki, la.key, la.grid, reads, writes))
    end = max(len(dispatches) - 1, 0)
    live: dict[int, list[int]] = {}
    for i, d in enumerate(dispatches):
        for b in (*d.reads, *d.writes):
            span = live.setdefault(b, [i, i])
            span[1] = i
    written = {b for d in dispatches for b in d.writes}
    persistent = {b for b in live if g.buffers[b].role in PERSISTENT}
    persistent |= set(g.outputs)
    persistent |= {b for b in live if b not in written}  # made before: cached constants
    for b in persistent:
        live[b] = [0, end]
    order = sorted(live, key=lambda b: (live[b][0], b))
    slot_of: dict[int, int] = {}
    slot_bytes: list[int] = []
    slot_free_at: list[int] = []  # last dispatch of the slot's current tenant
    for b in order:
        info = g.buffers[b]
        need = size_class(storage_bytes(info.numel, info.dtype))
        first, last = live[b]
        chosen = None
        if b not in persistent:
            for s, nbytes in enumerate(slot_bytes):
                if nbytes == need and slot_free_at[s] < first:
                    chosen = s
                    break
        if chosen is None:
            chosen = len(slot_bytes)
            slot_bytes.append(need)
            slot_free_at.append(-1)
        slot_of[b] = chosen
        slot_free_at[chosen] = end + 1 if b in persistent else last
    return Schedule(
        kg, dispatches, slot_of, slot_bytes, {b: tuple(v) for b, v in live.items()}, persistent
    )
