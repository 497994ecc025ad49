"""Matmul with a quantised frozen weight in WGSL (devices layer): codes decoded in the kernel.

The weight W [rows, cols] arrives as u32 words of packed codes and f32 scales
(``base.quant``'s layout); no dequantised copy of it is ever stored. The product is the
``TILES`` kernel of ``matmul.py`` with its B operand replaced by a function: ``ld_b(e)``
decodes element e of W's row-major order (its word, its bits, its level, its scale) in
the registers that would have held the loaded value. B is then a *virtual* operand
with W's strides: ``x @ W^T`` reads b(k, n) = W[n, k] (strides k: 1, n: cols),
``x @ W`` (the input's gradient) reads b(k, n) = W[k, n] (k: cols, n: 1). Each output is
still one f32 dot product over k = 0..K-1 in order, so the matmul kernel's accuracy
bound holds against the dequantised weight, and results are bitwise reproducible.
"""

from __future__ import annotations

from ....base.quant import NF4
from .common import Source
from .matmul import TILES, Side, _cdiv, _main, choose_side, choose_tile, fold_grid

_LEVELS = ", ".join(f"{v!r}" for v in NF4)


def _decoder(fmt: str, cols: int, block: int) -> str:
    """``ld_b(e) -> f32``: element e of W, decoded from ``ld_codes`` and ``ld_scales``."""
    if fmt == "int8":
        return (
            "fn ld_b(e: u32) -> f32 {\n"
            "  let byte = (ld_codes(e / 4u) >> ((e % 4u) * 8u)) & 255u;\n"
            "  // sign-extend the byte: shift it to the top, then arithmetic shift back\n"
            "  let v = bitcast<i32>(byte << 24u) >> 24u;\n"
            f"  return f32(v) * ld_scales(e / {cols}u);\n}}"
        )
    return (
        f"var<private> NF4: array<f32, 16> = array<f32, 16>({_LEVELS});\n"
        "fn ld_b(e: u32) -> f32 {\n"
        "  let code = (ld_codes(e / 8u) >> ((e % 8u) * 4u)) & 15u;\n"
        f"  return NF4[code] * ld_scales(e / {block}u);\n}}"
    )


def qmatmul_kernel(src: Source, op: str, ins, outs, attrs):
    x, codes, scales = ins
    out = outs[0]
    rows, cols = attrs["rows"], attrs["cols"]
    m, k = x.shape
    n = cols if attrs["trans"] else rows
    sb_k, sb_n = (cols, 1) if attrs["trans"] else (1, cols)
    sa_m, sa_k = x.strides
    side_a = choose_side(m, k, sa_m, sa_k, x.offset, [])
    side_b = Side("t" if sb_n == 1 else "k", False)  # decoded one element at a time
    tile = TILES[choose_tile(m, n, 1, src.limits, attrs.get("_tile"))]
    out_vec = n % 4 == 0
    tn, tm = _cdiv(n, tile.bm), _cdiv(m, tile.bm)
    groups = tn * tm
    src.add_meta(m, n, k, tn, tm, groups, x.offset, 0, sa_m, sa_k, sb_n, sb_k)
    src.add_meta(0)  # no batch dims
    src.operand("a", x, lanes=4 if side_a.vec else 1)
    src.operand("codes", codes)
    src.operand("scales", scales)
    src.operand("o", out, write=True, lanes=4 if out_vec else 1)
    src.fns.append(_decoder(attrs["fmt"], cols, attrs["block"]))
    half, half_out = x.dtype.name == "f16", out.dtype.name == "f16"
    src.body = _main(tile, side_a, side_b, out_vec, half, half_out)
    return fold_grid(groups, src.limits)


KERNELS = {"qmatmul": qmatmul_kernel}
