"""Layout WGSL kernels (devices layer): XLA-style pad and N-way concat.

``pad``: one invocation per output element; along each dim the output coordinate c
maps to input coordinate (c - lo) / (interior + 1) when c >= lo, the remainder is
zero and the quotient is in range, else the element is the fill value. Values are
copied bit for bit (f16 stays f16).

``concat``: one dispatch per non-empty input, each writing that input's slab of the
output, so a concat of any number of inputs binds two operands per dispatch and all
dispatches share one pipeline per input rank/contiguity. (``copy`` lives in
elementwise.)
"""

from __future__ import annotations

from ....base.shapes import numel
from .common import Source, f32_bits, grid_1d, main_1d, strided_index


def fill_bits(value, dtype) -> int:
    """``value`` as the u32 word the GPU stores for ``dtype`` (f16 travels as f32)."""
    if dtype.is_float:
        return f32_bits(value)
    if dtype.name == "bool":
        return 1 if value else 0
    return int(value) & 0xFFFFFFFF


def word_as(ty: str, word: str) -> str:
    """WGSL reading the u32 ``word`` as a value of ``ty``."""
    if ty == "u32":
        return word
    if ty == "f16":
        return f"f16(bitcast<f32>({word}))"
    return f"bitcast<{ty}>({word})"


def pad(src: Source, op: str, ins, outs, attrs):
    x, out = ins[0], outs[0]
    nd = len(out.shape)
    n = numel(out.shape)
    src.add_meta(n)
    ty = src.operand("x", x)
    src.operand("o", out, write=True)
    steps = [i + 1 for i in attrs["interior"]]
    fill = fill_bits(attrs.get("value", 0), x.dtype)
    at = src.add_meta(x.offset, fill, *out.shape, *x.shape, *attrs["lo"], *steps, *x.strides)

    def m(k: int, d: int) -> str:  # meta word of table k (0 out, 1 in, 2 lo, 3 step, 4 stride)
        return f"mt[{at + 2 + k * nd + d}u]"

    lines = ["  var r = i;", f"  var e = mt[{at}u];", "  var inside = true;"]
    for d in range(nd - 1, -1, -1):
        c = f"(r % {m(0, d)})" if d else "r"
        lines.append(f"  let c{d} = {c};" + (f" r = r / {m(0, d)};" if d else ""))
        # c < lo would wrap in u32: test it first
        lines.append(f"  let p{d} = c{d} - {m(2, d)}; let q{d} = p{d} / {m(3, d)};")
        lines.append(
            f"  inside = inside && c{d} >= {m(2, d)} && p{d} % {m(3, d)} == 0u && q{d} < {m(1, d)};"
        )
        lines.append(f"  e += q{d} * {m(4, d)};")
    lines.append(f"  var v = {word_as(ty, f'mt[{at + 1}u]')};")
    lines.append("  if (inside) { v = ld_x(e); }")
    lines.append("  st_o(i, v);")
    src.body = main_1d("\n".join(lines))
    return grid_1d(n, src.limits)


def concat(src: Source, op: str, ins, outs, attrs):
    out = outs[0]
    axis = attrs["axis"]
    inner = numel(out.shape[axis + 1 :])
    total = out.shape[axis]
    launches, at_axis = [], 0
    for x in ins:
        k = x.shape[axis]
        n = numel(x.shape)
        if n:
            s = src if not launches else src.sibling()
            s.add_meta(n)
            s.operand("x", x)
            s.operand("o", out, write=True)
            index = strided_index(s, x, x.shape, "e")
            at = s.add_meta(k * inner, (total - k) * inner, at_axis * inner)
            # input flat index i = (outer, j); the output row is total wide, this slab at at_axis
            s.body = main_1d(
                f"{index}\n  let outer = i / mt[{at}u];\n"
                f"  st_o(i + outer * mt[{at + 1}u] + mt[{at + 2}u], ld_x(e));"
            )
            launches.append((s, grid_1d(n, s.limits)))
        at_axis += k
    return launches


KERNELS = {"pad": pad, "concat": concat}
