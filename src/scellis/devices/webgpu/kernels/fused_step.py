"""The fused optimizer phase in WGSL (devices layer): ``grad_stats`` and ``step_tally``.

``grad_stats`` (ops/fused_step.py) reads every gradient where it lies, as many per
launch as the binding limit allows. Each invocation strides over the gradients of its
launch, summing squares and noting a non-finite element by its exponent bits (no
``x * 0`` a compiler could fold), then the workgroup folds its 256 partials as a fixed
tree. A small total (at most ``one_group_limit`` elements, one launch's worth of
bindings) is one workgroup and one launch, which also writes the result; otherwise each launch
runs up to ``GROUPS`` workgroups whose partials go to scratch storage, and a last
one-workgroup launch folds them in order and writes the result: two levels, so a
large model's gradients keep the whole GPU busy. The order is fixed by the shapes, so
repeated runs agree bitwise.

``step_tally``: one invocation adds the step to the loop's three accumulators.
"""

from __future__ import annotations

from ....base.errors import ShapeError
from ....base.shapes import numel
from ....ops.fused_step import CLIP_EPS, FACTOR, FINITE, NORM
from .common import WG, Source, _contiguous, f32_bits, main_1d

# elements one workgroup sums alone before two levels pay. A software adapter runs a
# workgroup on one CPU thread at memory speed, so one launch is best up to 256 elements
# an invocation; on a GPU one workgroup is one multiprocessor of many, and each of its
# invocations waits on memory once per element of its serial loop while the rest of
# the chip idles, so past 16 elements an invocation the work is spread out.
ONE_GROUP = 1 << 16
ONE_GROUP_GPU = 16 * WG
GROUPS = 64  # workgroups of a partial launch: a few per multiprocessor's worth of work
PER_INVOCATION = 4  # elements per invocation below which fewer workgroups are launched

_TREE = f"""  ws[lid] = s; wb[lid] = bad;
  workgroupBarrier();
  for (var h = {WG // 2}u; h > 0u; h = h >> 1u) {{
    if (lid < h) {{ ws[lid] = ws[lid] + ws[lid + h]; wb[lid] = max(wb[lid], wb[lid + h]); }}
    workgroupBarrier();
  }}"""

_DECLS = [f"var<workgroup> ws: array<f32, {WG}>;", f"var<workgroup> wb: array<f32, {WG}>;"]


def _entry(body: str) -> str:
    return (
        f"@compute @workgroup_size({WG})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, "
        "@builtin(num_workgroups) nwg: vec3<u32>, "
        "@builtin(local_invocation_index) lid: u32) {\n"
        f"  let stride = nwg.x * {WG}u;\n  let t = wid.x * {WG}u + lid;\n"
        f"  var s = 0.0;\n  var bad = 0.0;\n{body}\n}}\n"
    )


def _finish(src: Source, out, max_norm: float) -> str:
    """WGSL that writes the norm, clip factor and finite flag from the folded ws[0], wb[0]."""
    src.operand("o", out, write=True)
    at = src.add_meta(out.offset, f32_bits(max_norm), f32_bits(CLIP_EPS))
    return f"""  if (lid == 0u) {{
    let o = mt[{at}u]; let limit = bitcast<f32>(mt[{at + 1}u]);
    let norm = sqrt(ws[0]);
    let factor = select(1.0, min(limit / (norm + bitcast<f32>(mt[{at + 2}u])), 1.0), limit > 0.0);
    st_o(o + {NORM}u, norm); st_o(o + {FACTOR}u, factor); st_o(o + {FINITE}u, 1.0 - wb[0]);
  }}"""


def _sum_pack(src: Source, pack: list) -> str:
    """WGSL summing the squares of the gradients in ``pack`` into s (strided by the grid)."""
    lines = []
    for j, g in enumerate(pack):
        src.operand(f"g{j}", g)
        at = src.add_meta(g.offset, numel(g.shape))
        lines.append(
            f"  for (var e = t; e < mt[{at + 1}u]; e = e + stride) {{\n"
            f"    let v = ld_g{j}(mt[{at}u] + e); s = s + v * v;\n"
            "    bad = max(bad, select(0.0, 1.0, (bitcast<u32>(v) & EXP) == EXP));\n"
            "  }"
        )
    return "\n".join(lines).replace("EXP", "0x7f800000u")  # all exponent bits: inf or NaN


def _bindings(view) -> int:
    return len(view.buf.handle.windows())


def _packs(src: Source, grads) -> list[list]:
    """``grads`` in order, as many per launch as the binding limit allows (a gradient
    past one binding window takes one binding per window)."""
    budget = src.limits["max_storage_buffers_per_shader_stage"] - 3  # meta, result, scratch
    packs: list[list] = [[]]
    used = 0
    for g in grads:
        if packs[-1] and used + _bindings(g) > budget:
            packs.append([])
            used = 0
        packs[-1].append(g)
        used += _bindings(g)
    return packs


def grad_stats(src: Source, op: str, ins, outs, attrs):
    for g in ins:
        if not _contiguous(g):
            raise ShapeError("grad_stats reads contiguous gradients; call .contiguous() first")
    out, limit = outs[0], float(attrs.get("max_norm", 0.0))
    packs = _packs(src, ins)
    total = sum(numel(g.shape) for g in ins)
    if src.scratch is None or (len(packs) == 1 and total <= one_group_limit(src)):
        return _one_group(src, packs, out, limit)
    groups = [min(GROUPS, max(1, -(-sum(numel(g.shape) for g in p) // (WG * PER_INVOCATION))))
              for p in packs]  # fmt: skip
    part = src.scratch(2 * sum(groups))
    launches, slot = [], 0
    for pack, n in zip(packs, groups):
        s = src if not launches else src.sibling()
        s.add_meta(0)
        body = _sum_pack(s, pack)
        s.operand("part", part, write=True)
        at = s.add_meta(part.offset + 2 * slot)
        s.decls += _DECLS
        s.body = _entry(
            f"{body}\n{_TREE}\n  if (lid == 0u) {{\n"
            f"    let q = mt[{at}u] + 2u * wid.x;\n"
            "    st_part(q, ws[0]); st_part(q + 1u, wb[0]);"
            "\n  }"
        )
        launches.append((s, (n, 1, 1)))
        slot += n
    launches.append((_fold(src, part, slot, out, limit), (1, 1, 1)))
    return launches


def one_group_limit(src: Source) -> int:
    """The most elements this adapter sums in one workgroup, one launch (see above)."""
    return ONE_GROUP if src.software else ONE_GROUP_GPU


def _one_group(src: Source, packs: list, out, limit: float) -> list:
    """Every gradient in one workgroup per launch, the launches chained through the
    result's norm slot (a squared partial) and flag slot until the last finishes."""
    launches = []
    for k, pack in enumerate(packs):
        s = src if not launches else src.sibling()
        s.add_meta(0)
        body = _sum_pack(s, pack)
        s.decls += _DECLS
        if k:  # carry the earlier launches' sum and flag
            body = (
                "  if (lid == 0u) { s = ld_o(mt[CARRY]); bad = 1.0 - ld_o(mt[CARRY] + 2u); }\n"
                + body
            )
        last = k == len(packs) - 1
        fin = _finish(s, out, limit) if last else _carry(s, out)
        s.body = _entry(f"{body}\n{_TREE}\n{fin}")
        s.body = s.body.replace("mt[CARRY]", f"mt[{s.add_meta(out.offset)}u]")
        launches.append((s, (1, 1, 1)))
    return launches


def _carry(src: Source, out) -> str:
    src.operand("o", out, write=True)
    at = src.add_meta(out.offset)
    return (
        f"  if (lid == 0u) {{ st_o(mt[{at}u] + {NORM}u, ws[0]); "
        f"st_o(mt[{at}u] + {FINITE}u, 1.0 - wb[0]); }}"
    )


def _fold(src: Source, part, slots: int, out, limit: float) -> Source:
    s = src.sibling()
    s.add_meta(0)
    s.operand("part", part)
    at = s.add_meta(part.offset, slots)
    s.decls += _DECLS
    body = (
        f"  for (var p = lid; p < mt[{at + 1}u]; p = p + {WG}u) {{\n"
        f"    let q = mt[{at}u] + 2u * p;\n"
        "    s = s + ld_part(q); bad = max(bad, ld_part(q + 1u));\n"
        "  }"
    )
    s.body = _entry(f"{body}\n{_TREE}\n{_finish(s, out, limit)}")
    return s


def step_tally(src: Source, op: str, ins, outs, attrs):
    loss, stats = ins
    src.add_meta(1)
    src.operand("loss", loss)
    src.operand("gs", stats)
    names = ("total", "good", "skipped")
    for name, v in zip(names, outs):
        src.operand(name, v, write=True)
    at = src.add_meta(loss.offset, stats.offset, *(v.offset for v in outs))
    src.body = main_1d(
        f"  let ok = ld_gs(mt[{at + 1}u] + {FINITE}u);\n"
        f"  let et = mt[{at + 2}u]; let eg = mt[{at + 3}u]; let es = mt[{at + 4}u];\n"
        f"  st_total(et, ld_total(et) + select(0.0, ld_loss(mt[{at}u]), ok != 0.0));\n"
        "  st_good(eg, ld_good(eg) + ok);\n"
        "  st_skipped(es, ld_skipped(es) + (1.0 - ok));"
    )
    return (1, 1, 1)


KERNELS = {"grad_stats": grad_stats, "step_tally": step_tally}
