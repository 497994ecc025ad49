"""The op-graph rung (ir layer): the primitives a trace dispatched, with print + verify.

Built from a ``Trace``: for inference, the forward; for training, the steady-state step
(the trace's last: forward, loss, backward tape, optimizer). Buffers are renumbered
``%0, %1, ...`` by first appearance in the shown section, so the text is stable; each
operand prints as ``%n`` when it is its whole buffer, else with its view geometry. A
buffer the tape holds for backward is marked ``saved``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base.dtypes import DType
from ..base.errors import ScellisError
from ..base.shapes import contiguous_strides, numel
from ..ops.table import Spec, get_op
from .trace import Trace


@dataclass(frozen=True)
class Ref:
    """A strided view of buffer ``buf`` (elements)."""

    buf: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: DType

    def whole(self, buf_numel: int) -> bool:
        return (
            self.offset == 0
            and numel(self.shape) == buf_numel
            and self.strides == contiguous_strides(self.shape)
        )


@dataclass(frozen=True)
class Buf:
    numel: int
    dtype: DType
    role: str  # param | buffer | grad | state | input | saved | act
    name: str = ""


@dataclass
class OpNode:
    index: int
    op: str
    ins: tuple[Ref, ...]
    outs: tuple[Ref, ...]
    attrs: dict
    phase: str
    scope: str
    inplace: bool


@dataclass
class OpGraph:
    title: str
    mode: str
    buffers: dict[int, Buf]
    nodes: list[OpNode]
    outputs: list[int]
    output_refs: list[Ref]
    hidden: dict[str, int] = field(default_factory=dict)  # phase -> dispatches not shown

    # -- text --
    def ref_text(self, r: Ref) -> str:
        if r.whole(self.buffers[r.buf].numel):
            return f"%{r.buf}"
        shape = ",".join(map(str, r.shape))
        strides = ",".join(map(str, r.strides))
        return f"%{r.buf}[{shape}:{strides}+{r.offset}]"

    def text(self) -> str:
        lines = [f"# op graph: {self.title}"]
        for phase, n in self.hidden.items():
            lines.append(f"# not shown: {n} dispatches of phase {phase!r}")
        lines.append("buffers:")
        for b, info in self.buffers.items():
            if info.role in ("param", "buffer", "grad", "state", "input"):
                name = f" {info.name}" if info.name else ""
                lines.append(f"  %{b} {info.dtype}[{info.numel}] {info.role}{name}")
        phase = None
        for n in self.nodes:
            if n.phase != phase:
                phase = n.phase
                lines.append(f"{phase}:")
            outs = ", ".join(
                f"{self.ref_text(o)}:{o.dtype}{list(o.shape)}".replace(" ", "") for o in n.outs
            )
            ins = ", ".join(self.ref_text(i) for i in n.ins)
            attrs = _attr_text(n.attrs)
            marks = " saved" if any(self.buffers[o.buf].role == "saved" for o in n.outs) else ""
            marks += " in-place" if n.inplace else ""
            scope = f"[{n.scope}] " if n.scope else ""
            lines.append(f"  {n.index:4d} {scope}{outs} = {n.op}({ins}){attrs}{marks}")
        lines.append("outputs: " + ", ".join(self.ref_text(r) for r in self.output_refs))
        return "\n".join(lines) + "\n"

    def verify(self) -> list[str]:
        """Problems: a buffer read before it is written, or a shape the op table disagrees
        with. Empty when the graph is consistent."""
        # what exists before the section: parameters, inputs, and gradients and optimizer
        # state kept from the previous step; every other buffer must be written first
        problems = []
        written = {
            b
            for b, i in self.buffers.items()
            if i.role in ("param", "buffer", "input", "grad", "state")
        }
        for n in self.nodes:
            for r in n.ins:
                if r.buf not in written:
                    problems.append(f"op {n.index} ({n.op}) reads %{r.buf} before any op wrote it")
            specs = [Spec(r.shape, r.dtype) for r in n.ins]
            try:
                extra = [Spec(o.shape, o.dtype) for o in n.outs] if n.inplace else []
                got = get_op(n.op).infer(specs + extra, n.attrs)
            except ScellisError as e:
                problems.append(f"op {n.index} ({n.op}): the op table refuses it: {e}")
                continue
            want = [(o.shape, o.dtype) for o in n.outs]
            if [(tuple(s.shape), s.dtype) for s in got] != want:
                problems.append(f"op {n.index} ({n.op}): outputs {want}, the op table says {got}")
            written |= {o.buf for o in n.outs}
        return problems


def _attr_text(attrs: dict) -> str:
    shown = {k: v for k, v in sorted(attrs.items()) if not k.startswith("_")}
    if not shown:
        return ""
    return " {" + ", ".join(f"{k}={_value(v)}" for k, v in shown.items()) + "}"


def _value(v) -> str:
    if isinstance(v, float):
        return repr(round(v, 9))
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_value(x) for x in v) + "]"
    return str(v)


def _section(tr: Trace) -> tuple[int, int]:
    """Event range [lo, hi) of the section the graph shows."""
    marks = [i for i, e in enumerate(tr.events) if e[0] == "mark"]
    if tr.mode == "inference":
        return 0, marks[-1]
    return marks[-2] + 1, marks[-1]


def op_graph(tr: Trace) -> OpGraph:
    lo, hi = _section(tr)
    allocs = tr.allocs()
    fresh_since: set[int] = set()
    renum: dict[int, int] = {}
    buffers: dict[int, Buf] = {}
    nodes: list[OpNode] = []
    hidden: dict[str, int] = {}

    def ref(v) -> Ref:
        s = v.serial
        if s not in renum:
            renum[s] = len(renum)
            n, dt = allocs[s][0], allocs[s][1]
            buffers[renum[s]] = Buf(n, dt, *_role(tr, s))
        return Ref(renum[s], tuple(v.shape), tuple(v.strides), v.offset, v.dtype)

    section = list(tr.events[lo:hi])
    before = tr.events[:lo]
    if tr.mode == "inference":
        before = [e for e in section if e[0] == "run" and e[5] != "forward"]
        section = [e for e in section if e[0] != "run" or e[5] == "forward"]
    section = _constants(tr, before, section) + section
    for e in section:
        if e[0] == "alloc":
            fresh_since.add(e[1])
            continue
        if e[0] != "run":
            continue
        _, op, ins, outs, attrs, phase, scope = e
        inplace = any(o.serial not in fresh_since for o in outs)
        fresh_since.clear()
        node = OpNode(
            len(nodes),
            op,
            tuple(ref(v) for v in ins),
            tuple(ref(v) for v in outs),
            attrs,
            phase,
            scope,
            inplace,
        )
        nodes.append(node)
    if tr.mode == "inference":
        for e in tr.events[:lo]:
            if e[0] == "run":
                hidden[e[5]] = hidden.get(e[5], 0) + 1
    else:
        marks = [i for i, e in enumerate(tr.events) if e[0] == "mark"]
        hidden["earlier steps and init"] = sum(1 for e in tr.events[: marks[-2]] if e[0] == "run")
    outputs = [renum[s] for s in tr.outputs if s in renum]
    output_refs = [
        Ref(renum[s], *geom, buffers[renum[s]].dtype)
        for s, geom in zip(tr.outputs, tr.output_views)
        if s in renum
    ]
    title = f"{tr.record.get('model', '?')}, {tr.mode}, batch {tr.batch}, precision {tr.precision}"
    return OpGraph(title, tr.mode, buffers, nodes, outputs, output_refs, hidden)


def _constants(tr: Trace, before: list, section: list) -> list:
    """Run events (as phase "const") of the cached constants the section reads but an
    earlier phase made: ``full`` and ``arange`` results the runtime keeps per device."""
    written, read = set(), []
    for e in section:
        if e[0] == "run":
            read += [v.serial for v in e[2] if v.serial not in written]
            written |= {v.serial for v in e[3]}
    known = set(tr.params) | set(tr.buffers) | set(tr.inputs) | tr.grads | tr.state
    need = {s for s in read if s not in known}
    makers = {}
    for e in before:
        if e[0] == "run" and not e[2]:
            for v in e[3]:
                if v.serial in need:
                    makers[v.serial] = e
    out = []
    for e in makers.values():
        if e not in out:
            out.append(("run", e[1], e[2], e[3], e[4], "const", ""))
    return out


def _role(tr: Trace, s: int) -> tuple[str, str]:
    if s in tr.params:
        return "param", tr.params[s] if len(tr.params) > 1 else "(all parameters, flat)"
    if s in tr.buffers:
        return "buffer", tr.buffers[s]
    if s in tr.inputs:
        return "input", tr.inputs[s]
    if s in tr.grads:
        return "grad", ""
    if s in tr.state:
        return "state", ""
    if s in tr.saved:
        return "saved", ""
    return "act", ""
