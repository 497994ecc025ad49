"""Running a kernel graph on a real device (ir layer): the compiled inference forward.

The graph's buffers get real buffers: parameters and inputs are fed by the caller,
every other value is allocated when its kernel runs and dropped after its last
reader. Unfused kernels go through ``device.run`` (the same builders eager execution
uses); fused kernels are generated for the device's limits and launched on WebGPU.
A device without WGSL (the reference) runs a fused group op by op, which is the
semantics the fused kernel must reproduce.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..devices.base import Buffer, View
from ..runtime.tensor import Tensor
from .fusion import fused_elementwise, matmul_epilogue
from .graph import Ref
from .kernels import Kernel, KernelGraph


def _last_reads(kg: KernelGraph) -> dict[int, int]:
    last: dict[int, int] = {}
    for i, k in enumerate(kg.kernels):
        for n in k.ops:
            for r in n.ins:
                last[r.buf] = i
    return last


def run_graph(kg: KernelGraph, device, feeds: dict[int, Buffer],
              bases: dict[int, int] | None = None) -> list[Tensor]:  # fmt: skip
    """Run ``kg`` on ``device`` with ``feeds`` (graph buffer -> real buffer); returns the
    graph's outputs as tensors. ``bases`` gives a fed buffer's first element where the
    value starts further in (a parameter that is a span of an optimizer's flat buffer)."""
    bases = bases or {}
    g = kg.graph
    env: dict[int, Buffer] = dict(feeds)
    keep = set(feeds) | set(g.outputs)
    last = _last_reads(kg)
    wgsl = hasattr(device, "launch") and hasattr(device, "source")

    def buf(b: int) -> Buffer:
        if b not in env:
            info = g.buffers[b]
            env[b] = device.alloc(info.numel, info.dtype)
        return env[b]

    def view(r: Ref) -> View:
        return View(buf(r.buf), r.shape, r.strides, r.offset + bases.get(r.buf, 0), r.dtype)

    for i, k in enumerate(kg.kernels):
        if k.fused and wgsl:
            _launch_fused(device, k, view)
        else:
            for n in k.ops:
                missing = [r.buf for r in n.ins if r.buf not in env]
                if missing:
                    raise ScellisError(f"op {n.index} ({n.op}) reads %{missing[0]}, never written")
                device.run(n.op, [view(r) for r in n.ins], [view(r) for r in n.outs], n.attrs)
        for b in [b for b, at in last.items() if at == i and b not in keep]:
            env.pop(b, None)
    return [
        Tensor(env[r.buf], r.shape, r.strides, r.offset, r.dtype, device) for r in g.output_refs
    ]


def _launch_fused(device, k: Kernel, view) -> None:
    src = device.source()
    ins = [view(r) for r in k.ins]
    out = view(k.out)
    if k.fused == "matmul+epilogue":
        head = k.ops[0]
        o = head.outs[0]
        mm_out = view(Ref(k.out.buf, o.shape, o.strides, o.offset, o.dtype))
        a, b = (view(r) for r in head.ins)
        grid = matmul_epilogue(src, a, b, head.attrs, k.program, ins, mm_out)
    else:
        grid = fused_elementwise(src, k.program, ins, out)
    device.launch(src, grid)
    device.stats["fused_launches"] = device.stats.get("fused_launches", 0) + 1
