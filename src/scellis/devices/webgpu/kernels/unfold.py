"""Windows over time in WGSL (devices layer): ``time_unfold`` and ``time_fold``, one launch each.

``time_unfold``: one invocation per output element (b, t, c, j) of [B, n, C*size]: it
copies step ``t*stride + j*dilation - lo`` of channel c, bit for bit (f16 stays f16),
or writes zero where that step is padding. The input is read through its strides.

``time_fold``: one invocation per input step element (b, s, c) of [B, T, C]: it walks
the taps j = 0, 1, ..., keeps those whose window start ``s + lo - j*dilation`` is a
whole number of strides inside the windows, and sums their columns in that order in
f32 (an f16 cotangent is widened at the load, rounded once at the store). A gather, so
no atomics and no partial sums: repeated runs are bitwise equal.
"""

from __future__ import annotations

from ....base.shapes import numel
from .common import Source, grid_1d, main_1d


def time_unfold(src: Source, op: str, ins, outs, attrs):
    x, out = ins[0], outs[0]
    _, steps, channels = x.shape
    n = numel(out.shape)
    src.add_meta(n)
    ty = src.operand("x", x)
    src.operand("o", out, write=True)
    at = src.add_meta(
        attrs["size"], channels, out.shape[1], steps, attrs["stride"], attrs["dilation"],
        attrs["lo"], x.offset, *x.strides, out.offset,
    )  # fmt: skip
    size, cs, wins, ts, stride, dil, lo, xo, sb, st, sc, oo = (f"mt[{at + k}u]" for k in range(12))
    src.body = main_1d(
        f"  let j = i % {size}; let c = (i / {size}) % {cs};\n"
        f"  let w = (i / ({size} * {cs})) % {wins}; let b = i / ({size} * {cs} * {wins});\n"
        # the padded step; below lo (a u32 would wrap) or past the input: padding
        f"  let p = w * {stride} + j * {dil};\n"
        f"  var v = {ty}();\n"
        f"  if (p >= {lo} && p - {lo} < {ts}) {{\n"
        f"    v = ld_x({xo} + b * {sb} + (p - {lo}) * {st} + c * {sc});\n"
        "  }\n"
        f"  st_o({oo} + i, v);"
    )
    return grid_1d(n, src.limits)


def time_fold(src: Source, op: str, ins, outs, attrs):
    g, out = ins[0], outs[0]
    _, steps, channels = out.shape
    n = numel(out.shape)
    src.add_meta(n)
    src.operand("g", g, widen=True)
    src.operand("o", out, write=True, widen=True)
    at = src.add_meta(
        attrs["size"], channels, steps, g.shape[1], attrs["stride"], attrs["dilation"],
        attrs["lo"], g.offset, *g.strides, out.offset,
    )  # fmt: skip
    size, cs, ts, wins, stride, dil, lo, go, sb, sw, sk, oo = (f"mt[{at + k}u]" for k in range(12))
    src.body = main_1d(
        f"  let c = i % {cs}; let s = (i / {cs}) % {ts}; let b = i / ({cs} * {ts});\n"
        f"  let p = s + {lo};\n"
        f"  let row = {go} + b * {sb} + c * {size} * {sk};\n"
        "  var acc = 0.0;\n"
        f"  for (var j = 0u; j < {size}; j++) {{\n"
        f"    let tap = j * {dil};\n"
        "    if (tap > p) { break; }  // later taps start further back still\n"
        f"    let r = p - tap; let w = r / {stride};\n"
        f"    if (r % {stride} == 0u && w < {wins}) {{ acc += ld_g(row + w * {sw} + j * {sk}); }}\n"
        "  }\n"
        f"  st_o({oo} + i, acc);"
    )
    return grid_1d(n, src.limits)


KERNELS = {"time_unfold": time_unfold, "time_fold": time_fold}
