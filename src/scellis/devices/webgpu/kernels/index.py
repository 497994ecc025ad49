"""Index WGSL kernels (devices layer): gather and scatter_add, torch semantics, no atomics.

``gather(x, idx, axis)``: one invocation per output element (the shape of idx); it
reads x at the output's own coordinates off the axis (so an idx smaller than x
indexes x's leading region) and at ``idx`` on the axis.

``scatter_add(src, idx, axis, shape)``: output-stationary, for the ``debug`` tier's
bitwise repeatability without float atomics. Each output element walks the K source
entries of its column (its coordinates off the axis, k = 0..K-1 along it) in index
order and adds those whose index equals its own coordinate, accumulating in f32
(i32/u32 for ints). That is the order np.add.at visits them, so f32 results equal
the reference's f32 results. Cost: O(numel(shape) * K) loads, acceptable for now;
an embedding gradient with a large vocabulary wants a sort/segment pass later.

Out-of-range indices (negative or >= the axis size; i32 is read as u32, so negative
means huge): the device cannot raise, so the bad entries poison instead of being
dropped or clamped. gather writes the poison value in the element that used the bad
index; scatter_add writes it in every element of the column holding the bad index.
Poison is a quiet NaN for floats, i32 -2^31, u32 0xFFFFFFFF, bool true. The
reference device raises ShapeError on these inputs; run there to find the culprit.
"""

from __future__ import annotations

from ....base.shapes import numel
from .common import Source, grid_1d, main_1d
from .layout import word_as

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


def scatter_add(src: Source, op: str, ins, outs, attrs):
    vals, idx = ins
    out = outs[0]
    axis, nd, n = attrs["axis"], len(out.shape), numel(out.shape)
    src.add_meta(n)
    ty = src.operand("v", vals)
    src.operand("ix", idx)
    src.operand("o", out, write=True)
    acc = "f32" if vals.dtype.is_float else "u32" if ty == "u32" else "i32"
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
    load = "f32(ld_v(ev + k * {}))" if ty == "f16" else "ld_v(ev + k * {})"
    lines += [
        f"  var acc = {acc}(0);",
        "  var bad = false;",
        "  if (covered) {",
        f"    for (var k = 0u; k < mt[{at + 2}u]; k++) {{",
        f"      let j = bitcast<u32>(ld_ix(ei + k * {istr(axis)}));",
        f"      bad = bad || j >= mt[{at + 3}u];",
        f"      if (j == c{axis}) {{ acc += {load.format(vstr(axis))}; }}",
        "    }",
        "  }",
    ]
    if out.dtype.name == "bool":
        value = "min(acc, 1u)"  # adding bools is a logical or, as np.add.at on bool
    elif ty == "f16":
        value = "f16(acc)"
    else:
        value = "acc"
    lines.append(f"  st_o(i, select({value}, {word_as(ty, f'mt[{at + 4}u]')}, bad));")
    src.body = main_1d("\n".join(lines))
    return grid_1d(n, src.limits)


KERNELS = {"gather": gather, "scatter_add": scatter_add}
