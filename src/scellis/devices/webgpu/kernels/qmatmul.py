"""Matmul with a quantised frozen weight in WGSL (devices layer): codes decoded in the kernel.

The weight W [rows, cols] arrives as u32 words of packed codes and f32 scales
(``base.quant``'s layout); no dequantised copy of it is ever stored. B is a *virtual*
operand with W's strides: ``x @ W^T`` reads b(k, n) = W[n, k] (strides k: 1, n: cols),
``x @ W`` (the input's gradient) reads b(k, n) = W[k, n] (k: cols, n: 1).

Large products (``matmul.choose_reg``) whose rows are whole words (cols a multiple of
8 for NF4, 4 for int8) run the register-tiled ``REGS`` kernel of ``matmul.py`` with B's
load stage replaced (``_word_load``): each invocation fetches one u32 word, the 8 (or 4)
consecutive elements of a row of W that share one scale, decodes them together (shifts,
a 16-entry level table in workgroup memory for NF4, a sign-extending shift for int8)
and stashes the f32 values where ``_rload`` would have. Other products keep the
``TILES`` kernel with B replaced by ``ld_b(e)``, which decodes one element.

Double-quantised block scales arrive as their int8 codes and row scales; ``ld_scales``
decodes one (its code times its row's scale) where a stored scale would be read.

Either way every decoded value is code times scale, one f32 rounding, and each output
is the matmul kernel's dot product over it (in k order, or the REGS kernel's fixed
grouping), so the matmul kernels' accuracy bound holds against the dequantised weight
with one more rounding per product, and results are bitwise reproducible.
"""

from __future__ import annotations

from ....base.errors import LimitError
from ....base.quant import CODES_PER_WORD, DQ_GROUP, NF4
from .common import Source
from .matmul import (
    REGS,
    TILES,
    Reg,
    Side,
    _cdiv,
    _main,
    _rmain,
    choose_reg,
    choose_side,
    choose_tile,
    fold_grid,
)

_LEVELS = ", ".join(f"{v!r}" for v in NF4)
_NF4_TABLE = f"var<private> NF4: array<f32, 16> = array<f32, 16>({_LEVELS});"
_GROUP = 14  # meta word: elements per scale (cols for int8, the block for NF4)


def _decoder(fmt: str, group_at: int = _GROUP) -> str:
    """``ld_b(e) -> f32``: element e of W, decoded from ``ld_codes`` and ``ld_scales``
    (meta word ``group_at``: the elements per scale)."""
    if fmt == "int8":
        return (
            "fn ld_b(e: u32) -> f32 {\n"
            "  let byte = (ld_codes(e / 4u) >> ((e % 4u) * 8u)) & 255u;\n"
            "  // sign-extend the byte: shift it to the top, then arithmetic shift back\n"
            "  let v = bitcast<i32>(byte << 24u) >> 24u;\n"
            f"  return f32(v) * ld_scales(e / mt[{group_at}u]);\n}}"
        )
    return (
        f"{_NF4_TABLE}\nfn ld_b(e: u32) -> f32 {{\n"
        "  let code = (ld_codes(e / 8u) >> ((e % 8u) * 4u)) & 15u;\n"
        f"  return NF4[code] * ld_scales(e / mt[{group_at}u]);\n}}"
    )


# one word's values, decoded together: ``decode_word(word, scale)`` for 4 or 8 codes
_WORD_DECODERS = {
    "int8": """fn decode_word(w: u32, s: f32) -> vec4<f32> {
  let v = vec4<i32>(bitcast<i32>(w << 24u), bitcast<i32>(w << 16u), bitcast<i32>(w << 8u),
                    bitcast<i32>(w)) >> vec4<u32>(24u);
  return vec4<f32>(v) * s;
}""",
    "nf4": f"""{_NF4_TABLE}
var<workgroup> nf4_lut: array<f32, 16>;
fn level(w: u32, j: u32) -> f32 {{ return nf4_lut[(w >> (4u * j)) & 15u]; }}
fn decode_lo(w: u32, s: f32) -> vec4<f32> {{
  return vec4<f32>(level(w, 0u), level(w, 1u), level(w, 2u), level(w, 3u)) * s;
}}
fn decode_hi(w: u32, s: f32) -> vec4<f32> {{
  return vec4<f32>(level(w, 4u), level(w, 5u), level(w, 6u), level(w, 7u)) * s;
}}""",
}


def _word_load(r: Reg, fmt: str, trans: bool) -> tuple[str, str, str]:
    """(setup, fetch, stash) of the quantised B for the REGS kernel: one u32 word per
    invocation and pass, its codes consecutive along K (``x @ W^T``) or along N
    (``trans``); the stash writes sh_b as ``_rload`` does ([k][n], rows from ``sw``)."""
    per = CODES_PER_WORD[fmt]
    bn4, words = r.bn // 4, r.bn * r.bk // per
    along = r.bn // per if trans else r.bk // per  # words along the stride-1 dim
    setup = [f"  let bst = mt[10u]; let bsk = mt[11u]; let bgroup = mt[{_GROUP}u];"]
    if fmt == "nf4":  # the level table, in workgroup memory before the first fetch
        setup.append("  if (lid < 16u) { nf4_lut[lid] = NF4[lid]; }\n  workgroupBarrier();")
    fetch, stash = [], []
    halves = range(per // 4)
    for p in range(_cdiv(words, r.group)):
        v, idx = f"bq{p}", f"(li + {p * r.group}u)"
        if trans:  # the word holds n .. n + per - 1 at one k
            setup.append(f"  let {v}k = {idx} / {along}u; let {v}l = ({idx} % {along}u) * {per}u;")
        else:  # the word holds k .. k + per - 1 at one n
            setup.append(f"  let {v}l = {idx} / {along}u; let {v}k = ({idx} % {along}u) * {per}u;")
        zero = " ".join(f"{v}v{h} = vec4<f32>(0.0);" for h in halves)
        setup.append(f"  let {v}t = n0 + {v}l; let {v}e = ob + {v}t * bst; var {v}v0: vec4<f32>;")
        setup += [f"  var {v}v1: vec4<f32>;"] if per == 8 else []
        # the last pass may have idle invocations (fewer words than the group)
        live = f"({idx} < {words}u) & " if words % r.group else ""
        fetch.append(f"    {zero}\n    if ({live}({v}t < N) & ((kf + {v}k) < K)) {{")
        fetch.append(f"      let e = {v}e + (kf + {v}k) * bsk;")
        fetch.append(f"      let w = ld_codes(e / {per}u); let s = ld_scales(e / bgroup);")
        if fmt == "int8":
            fetch.append(f"      {v}v0 = decode_word(w, s);\n    }}")
        else:
            fetch.append(f"      {v}v0 = decode_lo(w, s); {v}v1 = decode_hi(w, s);\n    }}")
        if trans:
            lines = [f"sh_b[(sw + {v}k) * {bn4}u + {v}l / 4u + {h}u] = {v}v{h};" for h in halves]
        else:
            lines = [
                f"sh_b[(sw + {v}k + {j}u) * {bn4}u + {v}l / 4u][{v}l & 3u] = {v}v{j // 4}[{j % 4}];"
                for j in range(per)
            ]
        body = "\n".join(f"      {line}" for line in lines)
        stash.append(f"    if ({idx} < {words}u) {{\n{body}\n    }}" if live else body)
    return "\n".join(setup), "\n".join(fetch), "\n".join(stash)


def _word_aligned(fmt: str, cols: int) -> bool:
    """Every word holds codes of one row of W (so of one int8 scale, one NF4 block)."""
    return cols % CODES_PER_WORD[fmt] == 0


# a block's scale from its int8 code (4 per word) times its row's f32 scale (per 256)
_DQ_SCALES = f"""fn ld_scales(b: u32) -> f32 {{
  let byte = (ld_scodes(b / 4u) >> ((b % 4u) * 8u)) & 255u;
  return f32(bitcast<i32>(byte << 24u) >> 24u) * ld_srows(b / {DQ_GROUP}u);
}}"""


def bind_scales(src: Source, scales) -> None:
    """``ld_scales(b)``: block b's f32 scale, stored, or decoded from its int8 code."""
    if len(scales) == 1:
        src.operand("scales", scales[0])
        return
    src.operand("scodes", scales[0])
    src.operand("srows", scales[1])
    src.fns.append(_DQ_SCALES)


NF4_TABLE_BYTES = 16 * 4  # the workgroup copy of the 16 NF4 levels (``nf4_lut``)


def _limits_beside_table(limits: dict, fmt: str) -> dict:
    """``limits`` with the workgroup memory the NF4 level table takes set aside. A tile
    that fills the adapter's workgroup memory exactly (r128x64s2 on a 48 KiB GPU) would
    otherwise pass it by 64 bytes, which no driver is bound to catch: on an NVIDIA GPU
    the kernel faulted and the device was lost."""
    if fmt != "nf4":
        return limits
    key = "max_compute_workgroup_storage_size"
    return {**limits, key: limits[key] - NF4_TABLE_BYTES}


def qmatmul_kernel(src: Source, op: str, ins, outs, attrs):
    x, codes, *scales = ins
    out = outs[0]
    fmt, rows, cols, trans = attrs["fmt"], attrs["rows"], attrs["cols"], attrs["trans"]
    m, k = x.shape
    n = cols if trans else rows
    sb_k, sb_n = (cols, 1) if trans else (1, cols)
    sa_m, sa_k = x.strides
    side_a = choose_side(m, k, sa_m, sa_k, x.offset, [])
    want = attrs.get("_tile")
    # the REGS tile must leave room for the NF4 level table beside its staging buffers
    limits = _limits_beside_table(src.limits, fmt)
    reg = want if want in REGS else (choose_reg(m, n, k, 1, limits) if want is None else None)
    if reg is not None and not _word_aligned(fmt, cols):
        reg = None
    if reg is not None:
        tile = REGS[reg]
        if not tile.fits(limits):
            raise LimitError(f"qmatmul tile {reg} does not fit this device's limits")
        bm, bn = tile.bm, tile.bn
    else:
        tile = TILES[choose_tile(m, n, 1, src.limits, want)]
        bm = bn = tile.bm
    out_vec = n % 4 == 0 and out.offset % 4 == 0
    tn, tm = _cdiv(n, bn), _cdiv(m, bm)
    groups = tn * tm
    src.add_meta(m, n, k, tn, tm, groups, x.offset, 0, sa_m, sa_k, sb_n, sb_k, out.offset)
    src.add_meta(0)  # no batch dims
    src.add_meta(cols if fmt == "int8" else attrs["block"])
    src.operand("a", x, lanes=4 if side_a.vec else 1)
    src.operand("codes", codes)
    bind_scales(src, scales)
    src.operand("o", out, write=True, lanes=4 if out_vec else 1)
    half, half_out = x.dtype.name == "f16", out.dtype.name == "f16"
    side_b = Side("t" if sb_n == 1 else "k", False)
    if reg is not None:
        src.fns.append(_WORD_DECODERS[fmt])
        load = _word_load(tile, fmt, trans)
        src.body = _rmain(tile, side_a, side_b, out_vec, half, half_out, load)
    else:
        src.fns.append(_decoder(fmt))  # decoded one element at a time
        src.body = _main(tile, side_a, side_b, out_vec, half, half_out)
    return fold_grid(groups, src.limits)


KERNELS = {"qmatmul": qmatmul_kernel}
