"""Buffer lifetimes to bytes (ir layer): the planner's simulation of a device allocator.

Replays a trace's allocations and releases through the target allocator's rounding
(WebGPU: the pool's size classes of ``storage_bytes``; reference: NumPy's
``max(numel, 1) * itemsize``) and keeps, at every instant, the bytes live in each
class. Parameters, gradients, optimizer state, the tape's saved activations, inputs,
the f16 working copies of mixed precision and everything else (working memory) are
co-resident; the peak is the largest sum over time, and the breakdown at that instant
says what it is made of. On WebGPU the backend's scratch storage (temporaries passed
between one op's launches, such as the attention backward's score chunk) counts as
working memory from the first op that needs it on, at its largest request.

The WebGPU pool keeps a released storage for a later buffer of its size class and never
lends it to another class: what it holds free is device memory as much as what is in
use. The simulation keeps the same free lists (``Pool``), so the peak counts the
storages kept free at that instant (``pooled``), not only the live ones, until the
device empties its pool (``empty_pool``: after a base is quantised).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base.dtypes import f32
from ..devices.webgpu.backend import size_class, storage_bytes
from ..devices.webgpu.kernels.attention import scratch_floats
from .trace import Trace

CLASSES = (
    "parameters",
    "gradients",
    "optimizer_state",
    "activations",
    "inputs",
    "working_copies_f16",
    "working",
    "loop_state",
    "pooled",
)


@dataclass
class Pool:
    """The free storages a WebGPU pool keeps, by size class, and their bytes."""

    free: dict[int, int] = field(default_factory=dict)
    bytes: int = 0

    def take(self, nbytes: int) -> int:
        """Bytes a buffer of ``nbytes`` took from the free lists (0: a new storage)."""
        if not self.free.get(nbytes):
            return 0
        self.free[nbytes] -= 1
        self.bytes -= nbytes
        return nbytes

    def give(self, nbytes: int) -> None:
        self.free[nbytes] = self.free.get(nbytes, 0) + 1
        self.bytes += nbytes

    def clear(self) -> None:
        self.free.clear()
        self.bytes = 0

    def copy(self) -> Pool:
        return Pool(dict(self.free), self.bytes)


def cost_fn(device: str):
    if device == "reference":
        return lambda numel, dtype: max(numel, 1) * dtype.itemsize
    return lambda numel, dtype: size_class(storage_bytes(numel, dtype))


@dataclass
class MemoryProfile:
    peak: int
    at_peak: dict[str, int]  # class -> bytes live at the peak instant
    class_peaks: dict[str, int]  # class -> its own largest live bytes
    peak_phase: str
    at_end: dict[str, int] = field(default_factory=dict)  # class -> bytes live at the end
    largest: list[tuple[int, str, int, str]] = field(default_factory=list)  # bytes, class,...
    buffers: dict[int, tuple[int, object, str]] = field(default_factory=dict)
    # the peak once the model is built (its construction's temporaries, such as the f32
    # weights a quantised base replaces, are gone before anything runs on it)
    run_peak: int = 0
    # the peak while the model is built (its ``params`` phase): for a quantised base,
    # what a block-at-a-time load holds before the first step
    build_peak: int = 0
    pool: Pool = field(default_factory=Pool)  # the free storages kept at the end


def classify(tr: Trace) -> dict[int, str]:
    allocs = tr.allocs()
    cls = {}
    casts_of_params = set()
    for e in tr.events:
        if e[0] == "run" and e[1] == "cast" and tr.precision == "mixed_f16":
            if e[2] and e[2][0].serial in tr.params:
                casts_of_params |= {v.serial for v in e[3]}
    for s in allocs:
        if s in tr.params:
            cls[s] = "parameters"
        elif s in tr.grads:
            cls[s] = "gradients"
        elif s in tr.state:
            cls[s] = "optimizer_state"
        elif s in casts_of_params:
            cls[s] = "working_copies_f16"
        elif s in tr.saved:
            cls[s] = "activations"
        elif allocs[s][2] == "input":
            cls[s] = "inputs"
        else:
            cls[s] = "working"
    return cls


def profile(
    tr: Trace,
    device: str = "webgpu",
    loop_scalars: int = 0,
    pool: Pool | None = None,
    built: bool = False,
) -> MemoryProfile:
    """``loop_scalars`` 0-d f32 tensors are live throughout (the train loop's own);
    ``pool``: the free storages a WebGPU pool starts with (used up in place; none off
    WebGPU, where nothing is kept); ``built``: the model already exists, so the trace's
    construction (its ``params`` phase) is left out."""
    cost = cost_fn(device)
    cls = classify(tr)
    pool = pool if pool is not None else Pool()
    pooling = device == "webgpu"
    live = {c: 0 for c in CLASSES}
    live["loop_state"] = loop_scalars * cost(1, f32)
    live["pooled"] = pool.bytes
    sizes: dict[int, tuple[int, str]] = {}
    total = peak = live["loop_state"] + pool.bytes
    at_peak = dict(live)
    class_peaks = dict(live)
    phase = peak_phase = ""
    run_peak = build_peak = 0
    scratch = 0  # bytes of the backend's scratch storage (kernels' temporaries)
    for e in tr.events:
        if e[0] == "alloc":
            s, numel, dtype, phase = e[1], e[2], e[3], e[4]
            if built and phase == "params":
                continue
            nbytes = cost(numel, dtype)
            c = cls[s]
            sizes[s] = (nbytes, c)
            reused = pool.take(nbytes) if pooling else 0
            live["pooled"] -= reused
            live[c] += nbytes
            total += nbytes - reused
            class_peaks[c] = max(class_peaks[c], live[c])
            if total > peak:
                peak, at_peak, peak_phase = total, dict(live), phase
            if phase != "params":
                run_peak = max(run_peak, total)
            else:
                build_peak = max(build_peak, total)
        elif e[0] == "release" and e[1] in sizes:
            nbytes, c = sizes.pop(e[1])
            live[c] -= nbytes
            if pooling:  # kept for a later buffer of its size class
                pool.give(nbytes)
                live["pooled"] += nbytes
                class_peaks["pooled"] = max(class_peaks["pooled"], live["pooled"])
            else:
                total -= nbytes
        elif e[0] == "empty_pool" and pooling:  # the free storages handed back
            total -= pool.bytes
            live["pooled"] -= pool.bytes
            pool.clear()
        elif e[0] == "run" and device == "webgpu":
            # the backend's scratch storage grows to the largest request and stays
            floats = scratch_floats(e[1], e[2], e[4])
            need = cost(floats, f32) if floats else 0
            if need > scratch:
                live["working"] += need - scratch
                total += need - scratch
                scratch = need
                class_peaks["working"] = max(class_peaks["working"], live["working"])
                if total > peak:
                    peak, at_peak, peak_phase = total, dict(live), e[5]
                run_peak = max(run_peak, total)
    at_end = dict(live)
    allocs = tr.allocs()
    largest = sorted(
        ((sizes_or(allocs, s, cost), cls[s], s, allocs[s][3]) for s in allocs),
        reverse=True,
    )[:5]
    return MemoryProfile(peak, at_peak, class_peaks, peak_phase, at_end, largest,
                         run_peak=run_peak, build_peak=build_peak, pool=pool)  # fmt: skip


def scratch_bytes(tr: Trace, device: str = "webgpu") -> int:
    """The largest scratch storage any op of the trace asks the backend for (0 off WebGPU)."""
    if device != "webgpu":
        return 0
    floats = max((scratch_floats(e[1], e[2], e[4]) for e in tr.runs()), default=0)
    return cost_fn(device)(floats, f32) if floats else 0


def sizes_or(allocs, s, cost) -> int:
    numel, dtype = allocs[s][0], allocs[s][1]
    return cost(numel, dtype)
