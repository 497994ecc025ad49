"""Fusion on the inference forward (ir layer): elementwise chains and matmul epilogues.

A pass over a kernel graph that returns a new one. Walking the ops in order, an
elementwise op joins the group that produced one of its inputs when that value is the
group's current result, is read by no other op (and is no graph output), and is read
as a whole contiguous buffer of the same element count: then the value never needs to
exist in memory, and the group computes it in registers. A group headed by a matmul
becomes one matmul kernel whose store runs the chain (bias + activation, residual add)
on each output element; a group of elementwise ops becomes one elementwise kernel.
Every external input is read through its own strides, as the unfused kernels read it.

This is the ``fast`` tier: a fused chain keeps intermediates in f32 registers (an f16
intermediate is not rounded) and runs in one dispatch. Training graphs are returned
unchanged: their backward runs on the eager tape, unfused.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.dtypes import DType
from ..base.shapes import contiguous_strides, numel
from ..devices.webgpu.kernels.common import Source, grid_1d, main_1d, strided_index
from ..devices.webgpu.kernels.elementwise import (
    ELEMENTWISE,
    compute_type,
    expression,
    store_cast,
)
from ..devices.webgpu.kernels.mathlib import helpers_for
from ..devices.webgpu.kernels.matmul import matmul_kernel
from .graph import OpNode, Ref
from .kernels import Kernel, KernelGraph, VirtualMemory, launches_of


@dataclass(frozen=True)
class Step:
    """One op of a fused chain: ``args`` are ("x", k) external input k, ("v", j) the
    result of step j, or ("m", 0) the matmul's accumulator."""

    op: str
    args: tuple[tuple[str, int], ...]
    attrs: dict
    in_dtypes: tuple[DType, ...]
    out_dtype: DType
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    n_inputs: int
    matmul: bool


class _D:
    """What the expression builder reads of an operand: its dtype."""

    def __init__(self, dtype: DType):
        self.dtype = dtype


def _step_fns(src: Source, prog: Program) -> list[str]:
    fns = []
    for j, s in enumerate(prog.steps):
        ins = [_D(d) for d in s.in_dtypes]
        expr = expression(src, s.op, ins, _D(s.out_dtype), s.attrs)
        params = ", ".join(f"{n}: {compute_type(d)}" for n, d in zip("abc", s.in_dtypes))
        fns.append(f"fn f{j}({params}) -> {compute_type(s.out_dtype)} {{ return {expr}; }}")
        for h in helpers_for(expr):
            if h not in src.fns and h not in fns:
                fns.insert(0, h)
    return fns


def _chain(src: Source, prog: Program, ins, indent: str = "  ") -> list[str]:
    """WGSL lines computing every step for flat output index ``i``; ``v<last>`` is the
    result. External input k is loaded once, through its own strides."""
    lines = []
    for k, v in enumerate(ins):
        # an elementwise input arrives laid over its reader's output shape (broadcasts
        # as stride-0 views), and every step shares one flat index space
        lines.append(strided_index(src, v, v.shape, f"q{k}"))
        widen = "f32" if v.dtype.name == "f16" else ""
        lines.append(f"  let x{k} = {widen}(ld_x{k}(q{k}));")
    for j, s in enumerate(prog.steps):
        args = ", ".join(f"{kind}{idx}" if kind != "m" else "m" for kind, idx in s.args)
        lines.append(f"  let v{j} = f{j}({args});")
    return [indent + ln.strip() for ln in "\n".join(lines).splitlines()]


def fused_elementwise(src: Source, prog: Program, ins, out) -> tuple[int, int, int]:
    n = numel(out.shape)
    src.add_meta(n)
    for k, v in enumerate(ins):
        src.operand(f"x{k}", v)
    src.operand("o", out, write=True)
    src.fns.extend(_step_fns(src, prog))
    body = _chain(src, prog, ins)
    body.append(f"  st_o(i, {store_cast(out, f'v{len(prog.steps) - 1}')});")
    src.body = main_1d("\n".join(body))
    return grid_1d(n, src.limits)


def matmul_epilogue(src: Source, a, b, attrs: dict, prog: Program, ins, out):
    """The matmul kernel with its store running the chain on every output element."""
    grid = matmul_kernel(src, "matmul", [a, b], [out], attrs)
    for i, fn in enumerate(src.fns):
        if fn.startswith("fn st_o("):
            src.fns[i] = "fn st_mm(" + fn[len("fn st_o(") :]
    for k, v in enumerate(ins):
        src.operand(f"x{k}", v)
    src.fns.extend(_step_fns(src, prog))
    last = f"v{len(prog.steps) - 1}"
    vec = out.shape[-1] % 4 == 0
    if vec:
        chain = "\n".join(_chain(src, prog, ins, "    "))
        src.fns.append(
            "fn st_o(e: u32, acc: vec4<f32>) {\n  var r = acc;\n"
            "  for (var l = 0u; l < 4u; l++) {\n    let i = e * 4u + l; let m = acc[l];\n"
            f"{chain}\n    r[l] = {last};\n  }}\n  st_mm(e, r);\n}}"
        )
    else:
        chain = "\n".join(_chain(src, prog, ins))
        src.fns.append(
            f"fn st_o(e: u32, acc: f32) {{\n  let i = e; let m = acc;\n{chain}\n"
            f"  st_mm(e, {last});\n}}"
        )
    return grid


# -- the pass --


def _contig(r: Ref, n: int) -> bool:
    return r.offset == 0 and numel(r.shape) == n and r.strides == contiguous_strides(r.shape)


class _Group:
    def __init__(self, head: OpNode):
        self.nodes = [head]
        self.result = head.outs[0].buf
        self.numel = numel(head.outs[0].shape)
        self.matmul = head.op == "matmul"


def _fusable(node: OpNode) -> bool:
    return (
        node.op in ELEMENTWISE
        and not node.inplace
        and len(node.outs) == 1
        and _contig(node.outs[0], numel(node.outs[0].shape))
    )


def _program(group: _Group) -> tuple[Program, list[Ref]]:
    """The group's steps over its external inputs (the matmul's operands excluded)."""
    made: dict[int, int] = {}  # buffer -> step producing it
    ext: list[Ref] = []
    steps = []
    members = group.nodes[1:] if group.matmul else group.nodes
    mm_out = group.nodes[0].outs[0].buf if group.matmul else None
    for node in members:
        args = []
        for r in node.ins:
            if r.buf == mm_out:
                args.append(("m", 0))
            elif r.buf in made:
                args.append(("v", made[r.buf]))
            else:
                if r not in ext:
                    ext.append(r)
                args.append(("x", ext.index(r)))
        made[node.outs[0].buf] = len(steps)
        steps.append(
            Step(
                node.op,
                tuple(args),
                dict(node.attrs),
                tuple(r.dtype for r in node.ins),
                node.outs[0].dtype,
                node.outs[0].shape,
            )
        )
    return Program(tuple(steps), len(ext), group.matmul), ext


def _bindings(mem: VirtualMemory, group: _Group, extra: OpNode | None) -> int:
    nodes = group.nodes + ([extra] if extra else [])
    made = {n.outs[0].buf for n in nodes}
    reads = {r.buf for n in nodes for r in n.ins if r.buf not in made}
    if group.matmul:
        reads |= {r.buf for r in group.nodes[0].ins}
    return sum(mem.windows(b) for b in reads) + mem.windows(nodes[-1].outs[0].buf) + 1


def fuse(kg: KernelGraph) -> KernelGraph:
    """Fused kernel graph of an inference forward (a training graph comes back as is)."""
    g = kg.graph
    if g.mode != "inference":
        return KernelGraph(g, kg.target, kg.kernels, kg.notes + ["fusion: not for training"])
    mem = VirtualMemory(g, kg.target)
    readers: dict[int, list[tuple[int, Ref]]] = {}
    for n in g.nodes:
        for r in n.ins:
            readers.setdefault(r.buf, []).append((n.index, r))
    outputs = set(g.outputs)
    limit = kg.target.limits["max_storage_buffers_per_shader_stage"]
    groups: list[_Group] = []
    open_by_result: dict[int, _Group] = {}
    for node in g.nodes:
        joined = None
        if _fusable(node):
            for r in node.ins:
                grp = open_by_result.get(r.buf)
                if grp is None or r.buf in outputs:
                    continue
                uses = readers.get(r.buf, [])
                n_out = numel(node.outs[0].shape)
                if (
                    n_out == grp.numel
                    and all(i == node.index and _contig(rr, grp.numel) for i, rr in uses)
                    and (not grp.matmul or node.outs[0].dtype.name == "f32")
                    and _bindings(mem, grp, node) <= limit
                ):
                    joined = grp
                    break
        if joined is not None:
            del open_by_result[joined.result]
            joined.nodes.append(node)
            joined.result = node.outs[0].buf
            open_by_result[joined.result] = joined
            continue
        grp = _Group(node)
        groups.append(grp)
        if (_fusable(node) or (node.op == "matmul" and node.outs[0].dtype.name == "f32")) and (
            not node.inplace
        ):
            open_by_result[grp.result] = grp
    # a group runs where its last op ran: every input it reads exists by then
    groups.sort(key=lambda grp: grp.nodes[-1].index)
    kernels = []
    for grp in groups:
        if len(grp.nodes) == 1:
            kernels.append(next(k for k in kg.kernels if k.ops[0] is grp.nodes[0]))
            continue
        prog, ext = _program(grp)
        out_ref = grp.nodes[-1].outs[0]
        src = mem.source()
        ins = [mem.view(r) for r in ext]
        out = mem.view(out_ref)
        if grp.matmul:
            head = grp.nodes[0]
            # the matmul writes the chain's output buffer, shaped as its own output
            mm_out = mem.view(Ref(out_ref.buf, *_geom(head.outs[0]), out_ref.dtype))
            a, b = (mem.view(r) for r in head.ins)
            grid = matmul_epilogue(src, a, b, head.attrs, prog, ins, mm_out)
            name, kind = "fusion.matmul_epilogue", "matmul+epilogue"
        else:
            grid = fused_elementwise(src, prog, ins, out)
            name, kind = "fusion.fused_elementwise", "elementwise"
        kernels.append(Kernel(name, grp.nodes, launches_of(src, grid), kind, prog, ext, out_ref))
    notes = kg.notes + [
        f"fusion: {kg.dispatches} dispatches unfused, "
        f"{sum(len(k.launches) for k in kernels)} fused (fast tier)"
    ]
    return KernelGraph(g, kg.target, kernels, notes)


def _geom(r: Ref) -> tuple:
    return r.shape, r.strides, r.offset
