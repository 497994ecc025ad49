"""The kernel-graph rung (ir layer): which WGSL kernel each op lowers to, with print + verify.

Lowering runs the webgpu backend's own kernel builders on *virtual* storage: buffers
laid out exactly as the backend's allocator would lay them out for the target's
limits (size class, chunks of ``maxBufferSize``, binding windows of
``maxStorageBufferBindingSize``), but with no GPU behind them. So the WGSL text, the
grid and the bindings of every launch here are the ones the backend compiles and
dispatches when it runs the same op eagerly; a tensor wider than one binding window
shows as split into windows. Fused kernels (``ir.fusion``) are built the same way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..base.errors import DTypeError, LimitError, ScellisError
from ..devices.base import Buffer, View
from ..devices.webgpu.backend import binding_geometry, size_class, storage_bytes
from ..devices.webgpu.kernels import KERNELS
from ..devices.webgpu.kernels.common import Source, Storage
from .graph import OpGraph, OpNode, Ref
from .limits import Target


class _Virtual:
    """The backend a virtual buffer belongs to: nothing to release."""

    name = "virtual"


_VIRTUAL = _Virtual()


@dataclass
class Launch:
    text: str
    grid: tuple[int, int, int]
    bindings: int  # storage bindings, the meta buffer included
    meta: list[int]

    @property
    def key(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:10]


@dataclass
class Kernel:
    name: str
    ops: list[OpNode]
    launches: list[Launch]
    fused: str = ""  # "" | "elementwise" | "matmul+epilogue"
    program: object = None  # a fusion.Program for fused kernels
    ins: list[Ref] = field(default_factory=list)
    out: Ref | None = None


class VirtualMemory:
    """Virtual storages for an op graph's buffers, laid out for ``target``'s limits."""

    def __init__(self, graph: OpGraph, target: Target):
        self.graph, self.target = graph, target
        self.window, self.chunk = binding_geometry(target.limits)
        self._bufs: dict[int, Buffer] = {}

    def buffer(self, b: int) -> Buffer:
        buf = self._bufs.get(b)
        if buf is None:
            info = self.graph.buffers[b]
            nbytes = storage_bytes(info.numel, info.dtype)
            key = size_class(nbytes)
            n_chunks = max(1, -(-key // self.chunk))
            chunks = [f"%{b}.{k}" for k in range(n_chunks)]
            st = Storage(chunks, self.chunk, key, self.window, pool_key=key)
            st.nbytes = nbytes
            buf = Buffer(_VIRTUAL, st, info.numel, info.dtype)
            self._bufs[b] = buf
        return buf

    def windows(self, b: int) -> int:
        return len(self.buffer(b).handle.windows())

    def view(self, r: Ref) -> View:
        return View(self.buffer(r.buf), r.shape, r.strides, r.offset, r.dtype)

    def source(self) -> Source:
        return Source(self.target.limits, self.target.has_f16, software=self.target.software)


def launches_of(src: Source, result) -> list[Launch]:
    pairs = result if isinstance(result, list) else [(src, result)]
    out = []
    for s, grid in pairs:
        s.check_bindings()  # as the backend does before each launch: LimitError past it
        out.append(Launch(s.text(), tuple(grid), len(s.bindings) + 1, list(s.meta)))
    return out


def lower_op(mem: VirtualMemory, node: OpNode) -> Kernel:
    builder = KERNELS.get(node.op)
    if builder is None:
        raise ScellisError(f"op {node.index} ({node.op}): the webgpu backend has no kernel")
    if any(mem.graph.buffers[o.buf].numel == 0 for o in node.outs):
        return Kernel(f"{builder.__module__.rsplit('.', 1)[-1]}.{builder.__name__}", [node], [])
    src = mem.source()
    ins = [mem.view(r) for r in node.ins]
    outs = [mem.view(r) for r in node.outs]
    result = builder(src, node.op, ins, outs, node.attrs)
    name = f"{builder.__module__.rsplit('.', 1)[-1]}.{builder.__name__}"
    return Kernel(name, [node], launches_of(src, result), ins=list(node.ins), out=node.outs[0])


@dataclass
class KernelGraph:
    graph: OpGraph
    target: Target
    kernels: list[Kernel]
    notes: list[str] = field(default_factory=list)

    @property
    def dispatches(self) -> int:
        return sum(len(k.launches) for k in self.kernels)

    def text(self) -> str:
        g = self.graph
        lines = [
            f"# kernel graph: {g.title}",
            f"# limits: {self.target.limits_source}",
            f"# {len(self.kernels)} kernels, {self.dispatches} dispatches",
        ]
        lines += [f"# {n}" for n in self.notes]
        mem = VirtualMemory(g, self.target)
        for i, k in enumerate(self.kernels):
            ops = ",".join(str(n.index) for n in k.ops)
            names = "+".join(n.op for n in k.ops)
            tag = f" fused:{k.fused}" if k.fused else ""
            lines.append(f"  k{i:<4d} {k.name}{tag} <- op {ops} ({names})")
            runs: list[list] = []  # repeated identical launches print once, with a count
            for la in k.launches:
                sig = (la.key, la.grid, la.bindings)
                if runs and runs[-1][0] == sig:
                    runs[-1][1] += 1
                else:
                    runs.append([sig, 1])
            for (key, grid, nb), count in runs:
                times = f" x{count}" if count > 1 else ""
                lines.append(
                    f"         pipeline {key} grid {grid[0]}x{grid[1]}x{grid[2]}"
                    f" bindings {nb}{times}"
                )
            split = sorted(
                {r.buf for n in k.ops for r in (*n.ins, *n.outs) if mem.windows(r.buf) > 1}
            )
            for b in split:
                lines.append(f"         split: %{b} over {mem.windows(b)} binding windows")
        return "\n".join(lines) + "\n"

    def verify(self) -> list[str]:
        problems = []
        covered = [n.index for k in self.kernels for n in k.ops]
        want = [n.index for n in self.graph.nodes]
        if sorted(covered) != sorted(want):
            problems.append("the kernels do not cover every op exactly once")
        limit = self.target.limits["max_storage_buffers_per_shader_stage"]
        for i, k in enumerate(self.kernels):
            for la in k.launches:
                if la.bindings > limit:
                    problems.append(
                        f"kernel {i} ({k.name}) needs {la.bindings} storage bindings, over "
                        f"maxStorageBuffersPerShaderStage={limit}"
                    )
                if "fn main" not in la.text:
                    problems.append(f"kernel {i} ({k.name}) has no entry point")
        return problems

    def pipelines(self) -> dict[str, str]:
        """key -> WGSL text of every distinct pipeline, in order of first use."""
        out: dict[str, str] = {}
        for k in self.kernels:
            for la in k.launches:
                out.setdefault(la.key, la.text)
        return out


def lower(graph: OpGraph, target: Target) -> KernelGraph:
    """One kernel per op, as eager execution runs them."""
    mem = VirtualMemory(graph, target)
    kernels, refused = [], {}
    for node in graph.nodes:
        try:
            kernels.append(lower_op(mem, node))
        except LimitError as e:  # what the backend would refuse at run time
            where = f" [{node.scope}]" if node.scope else ""
            raise LimitError(f"op {node.index} ({node.op}){where}: {e}") from None
        except DTypeError as e:  # a dtype a kernel cannot run here: name every such kernel
            ops = refused.setdefault(str(e), [])
            if node.op not in ops:
                ops.append(node.op)
    if refused:
        raise DTypeError("; ".join(f"{', '.join(ops)}: {why}" for why, ops in refused.items()))
    notes = []
    if graph.mode == "training":
        notes.append("training: forward, backward and optimizer stay eager (one kernel per op)")
    return KernelGraph(graph, target, kernels, notes)
