"""Index WGSL kernels (devices layer): gather and scatter_add, torch semantics, no atomics.

``gather(x, idx, axis)``: one invocation per output element (the shape of idx); it
reads x at the output's own coordinates off the axis (so an idx smaller than x
indexes x's leading region) and at ``idx`` on the axis.

``scatter_add(src, idx, axis, shape)``: output-stationary, for the ``debug`` tier's
bitwise repeatability without float atomics. Each output element walks the K source
entries of its column (its coordinates off the axis, k = 0..K-1 along it) in index
order and adds those whose index equals its own coordinate, accumulating in f32
(i32/u32 for ints). That is the order np.add.at visits them, so f32 results equal
the reference's f32 results. Cost: O(numel(shape) * K) index loads.

When the index is the same in every column (stride 0 or size 1 off the axis: an
embedding's gradient, whose index is the token ids expanded over the features), the
``rows`` kernel runs instead: one workgroup per (output row v, block of ROW_WG
columns). Its invocations test ROW_WG indices at a time against v, mark the hits in a
workgroup bit mask, and every invocation then adds the hit rows of its column in
ascending k, the same values in the same order as above, so the results are the same
bit for bit. Cost: O(shape[axis] * K * columns / ROW_WG) index loads instead of
O(numel(shape) * K): 128x fewer, which makes a large vocabulary's gradient affordable.

Out-of-range indices (negative or >= the axis size; i32 is read as u32, so negative
means huge): the device cannot raise, so the bad entries poison instead of being
dropped or clamped. gather writes the poison value in the element that used the bad
index; scatter_add writes it in every element of the column holding the bad index.
Poison is a quiet NaN for floats, i32 -2^31, u32 0xFFFFFFFF, bool true. The
reference device raises ShapeError on these inputs; run there to find the culprit.
"""

from __future__ import annotations

from ....base.shapes import numel
from .common import Source, grid_1d, main_1d, wgsl_type
from .layout import word_as
from .matmul import fold_grid

_POISON = {"f32": 0x7FC00000, "f16": 0x7FC00000, "i32": 0x80000000, "u32": 0xFFFFFFFF, "bool": 1}


def _coords(nd: int, size: str) -> list[str]:
    """WGSL lines splitting flat ``i`` into ``c0..c{nd-1}`` (``size(d)`` a meta word)."""
    lines = ["  var r = i;"]
    for d in range(nd - 1, 0, -1):
        lines.append(f"  let c{d} = r % {size(d)}; r = r / {size(d)};")
    if nd:
        lines.append("  let c0 = r;")
    return lines


def gather(src: Source, op: str, ins, outs, attrs):
    x, idx = ins
    out = outs[0]
    axis, nd, n = attrs["axis"], len(out.shape), numel(out.shape)
    src.add_meta(n)
    ty = src.operand("x", x)
    src.operand("ix", idx)
    src.operand("o", out, write=True)
    at = src.add_meta(
        x.offset,
        idx.offset,
        x.shape[axis],
        _POISON[out.dtype.name],
        *out.shape,
        *idx.strides,
        *x.strides,
    )
    size = lambda d: f"mt[{at + 4 + d}u]"
    istr = lambda d: f"mt[{at + 4 + nd + d}u]"
    xstr = lambda d: f"mt[{at + 4 + 2 * nd + d}u]"
    lines = _coords(nd, size)
    lines += [f"  var ex = mt[{at}u];", f"  var ei = mt[{at + 1}u];"]
    for d in range(nd):
        lines.append(f"  ei += c{d} * {istr(d)};")
        if d != axis:
            lines.append(f"  ex += c{d} * {xstr(d)};")
    lines.append("  let j = bitcast<u32>(ld_ix(ei));")
    lines.append(f"  var v = {word_as(ty, f'mt[{at + 3}u]')};")
    lines.append(f"  if (j < mt[{at + 2}u]) {{ v = ld_x(ex + j * {xstr(axis)}); }}")
    lines.append("  st_o(i, v);")
    src.body = main_1d("\n".join(lines))
    return grid_1d(n, src.limits)


ROW_WG = 128  # columns per workgroup of the rows kernel, and indices tested per pass


def _index_is_per_row(idx, axis: int) -> bool:
    """Whether ``idx`` holds one index per position along ``axis``, the same in every
    column (stride 0 or size 1 on every other dim)."""
    return all(
        n == 1 or st == 0 for d, (n, st) in enumerate(zip(idx.shape, idx.strides)) if d != axis
    )


def _accumulator(vals) -> str:
    """The WGSL type sums of ``vals`` run in: f32 for floats (f16 widened), else its int."""
    if vals.dtype.is_float:
        return "f32"
    return "u32" if wgsl_type(vals.dtype) == "u32" else "i32"


def _load_value(ty: str, at: str) -> str:
    return f"f32(ld_v({at}))" if ty == "f16" else f"ld_v({at})"


def _final_value(ty: str, out) -> str:
    if out.dtype.name == "bool":
        return "min(acc, 1u)"  # adding bools is a logical or, as np.add.at on bool
    return "f16(acc)" if ty == "f16" else "acc"


def scatter_add_rows(src: Source, vals, idx, out, axis: int):
    """The rows kernel (see the module docstring); returns the grid."""
    nd = len(out.shape)
    off = [d for d in range(nd) if d != axis]
    cols = numel([out.shape[d] for d in off])
    blocks = -(-cols // ROW_WG)
    groups = out.shape[axis] * blocks
    src.add_meta(groups)
    ty = src.operand("v", vals)
    src.operand("ix", idx)
    src.operand("o", out, write=True)
    at = src.add_meta(
        vals.offset, idx.offset, vals.shape[axis], out.shape[axis], _POISON[out.dtype.name],
        blocks, cols, out.offset, idx.strides[axis],
        *out.shape, *vals.shape, *vals.strides, *out.strides,
    )  # fmt: skip
    m = lambda k: f"mt[{at + k}u]"  # noqa: E731
    size, vsize = (lambda d: m(9 + d)), (lambda d: m(9 + nd + d))
    vstr, ostr = (lambda d: m(9 + 2 * nd + d)), (lambda d: m(9 + 3 * nd + d))
    words = ROW_WG // 32
    coords = ["  var r = col;"]
    for d in reversed(off):
        coords.append(f"  let c{d} = r % {size(d)}; r = r / {size(d)};")
    place = [f"  var ev = {m(0)}; var eo = {m(7)} + v * {ostr(axis)};", "  var covered = live;"]
    for d in off:
        place.append(f"  covered = covered && c{d} < {vsize(d)};")
        place.append(f"  ev += c{d} * {vstr(d)}; eo += c{d} * {ostr(d)};")
    lines = [
        "  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);",
        "  if (g >= mt[0]) { return; }",
        f"  let v = g / {m(5)}; let col = (g % {m(5)}) * {ROW_WG}u + lid;",
        f"  let live = col < {m(6)};",
        *coords,
        *place,
        f"  var acc = {_accumulator(vals)}(0);",
        # cleared here, not left to WGSL's zero-initialisation: through wgpu on lavapipe
        # the flag was seen set at a workgroup's start
        "  if (lid == 0u) { atomicStore(&bad, 0u); }",
        "  workgroupBarrier();",
        f"  for (var k0 = 0u; k0 < {m(2)}; k0 += {ROW_WG}u) {{",
        f"    if (lid < {words}u) {{ atomicStore(&hits[lid], 0u); }}",
        "    workgroupBarrier();",
        "    let k = k0 + lid;",
        f"    if (k < {m(2)}) {{",
        f"      let j = bitcast<u32>(ld_ix({m(1)} + k * {m(8)}));",
        "      if (j == v) { atomicOr(&hits[lid / 32u], 1u << (lid % 32u)); }",
        f"      if (j >= {m(3)}) {{ atomicOr(&bad, 1u); }}",
        "    }",
        "    workgroupBarrier();",
        f"    for (var w = 0u; w < {words}u; w++) {{",
        "      var bits = atomicLoad(&hits[w]);",
        "      while (bits != 0u) {",
        "        let kk = k0 + w * 32u + countTrailingZeros(bits);",
        f"        if (covered) {{ acc += {_load_value(ty, f'ev + kk * {vstr(axis)}')}; }}",
        "        bits &= bits - 1u;",
        "      }",
        "    }",
        "    workgroupBarrier();",
        "  }",
        "  let poisoned = atomicLoad(&bad) != 0u;",
        f"  if (live) {{ st_o(eo, select({_final_value(ty, out)}, "
        f"{word_as(ty, m(4))}, poisoned && covered)); }}",
    ]
    src.decls.append(f"var<workgroup> hits: array<atomic<u32>, {words}>;")
    src.decls.append("var<workgroup> bad: atomic<u32>;")
    src.body = (
        f"@compute @workgroup_size({ROW_WG})\n"
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n"
        "        @builtin(local_invocation_index) lid: u32) {\n" + "\n".join(lines) + "\n}\n"
    )
    return fold_grid(groups, src.limits)


def scatter_add(src: Source, op: str, ins, outs, attrs):
    vals, idx = ins
    out = outs[0]
    axis, nd, n = attrs["axis"], len(out.shape), numel(out.shape)
    if _index_is_per_row(idx, axis) and n > 0:
        return scatter_add_rows(src, vals, idx, out, axis)
    src.add_meta(n)
    ty = src.operand("v", vals)
    src.operand("ix", idx)
    src.operand("o", out, write=True)
    at = src.add_meta(
        vals.offset,
        idx.offset,
        vals.shape[axis],
        out.shape[axis],
        _POISON[out.dtype.name],
        *out.shape,
        *vals.shape,
        *vals.strides,
        *idx.strides,
    )
    size = lambda d: f"mt[{at + 5 + d}u]"
    vsize = lambda d: f"mt[{at + 5 + nd + d}u]"
    vstr = lambda d: f"mt[{at + 5 + 2 * nd + d}u]"
    istr = lambda d: f"mt[{at + 5 + 3 * nd + d}u]"
    lines = _coords(nd, size)
    lines += [f"  var ev = mt[{at}u];", f"  var ei = mt[{at + 1}u];", "  var covered = true;"]
    for d in range(nd):
        if d != axis:
            lines.append(f"  covered = covered && c{d} < {vsize(d)};")
            lines.append(f"  ev += c{d} * {vstr(d)}; ei += c{d} * {istr(d)};")
    lines += [
        f"  var acc = {_accumulator(vals)}(0);",
        "  var bad = false;",
        "  if (covered) {",
        f"    for (var k = 0u; k < mt[{at + 2}u]; k++) {{",
        f"      let j = bitcast<u32>(ld_ix(ei + k * {istr(axis)}));",
        f"      bad = bad || j >= mt[{at + 3}u];",
        f"      if (j == c{axis}) {{ acc += {_load_value(ty, f'ev + k * {vstr(axis)}')}; }}",
        "    }",
        "  }",
    ]
    value = _final_value(ty, out)
    lines.append(f"  st_o(i, select({value}, {word_as(ty, f'mt[{at + 4}u]')}, bad));")
    src.body = main_1d("\n".join(lines))
    return grid_1d(n, src.limits)


KERNELS = {"gather": gather, "scatter_add": scatter_add}
