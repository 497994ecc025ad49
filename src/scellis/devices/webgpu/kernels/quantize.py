"""Quantising a weight in WGSL (devices layer): ``quant_absmax`` and ``quant_codes``.

The codes must be bitwise those of ``base.quant.quantize``, which decides each code by
one f64 rounding of an exact quotient (module doc there). WGSL has no f64 and its f32
division is not correctly rounded, so every decision here is made exactly in integer
arithmetic on the f32 bit patterns: a value is mantissa * 2^exponent, products of
mantissas go to 64 bits (two u32 words), and comparisons align the two sides by their
leading bits. The int8 scale, max|W| / 127 rounded to the nearest f32, is a u32 long
division with round-to-nearest-even, subnormal results included.

- ``quant_absmax``: one invocation per group (a row for int8, a block for NF4): the
  max of the magnitude bits (the order of non-negative floats), divided by 1 or 127.
- ``quant_codes``: one invocation per u32 word (8 NF4 or 4 int8 codes), each code
  found by a binary search of its level boundaries, every comparison exact: NF4 counts
  the midpoints m with m * top < v (``base.quant.NF4_MIDS``, exact binary fractions),
  int8 counts the half-integers j + 1/2 with (2j + 1) top < 254 |v|, ties to even.
"""

from __future__ import annotations

from fractions import Fraction

from ....base.errors import DeviceError
from ....base.quant import CODES_PER_WORD, NF4_MIDS, QuantSpec
from .common import Source, _contiguous, grid_1d, main_1d
from .qmatmul import _decoder

MID_SHIFT = 28  # every NF4 midpoint is a multiple of 2^-28


def _mid_numerators() -> list[int]:
    """|midpoint| * 2^MID_SHIFT, exact integers of at most 32 bits."""
    out = [abs(Fraction(m)) * 2**MID_SHIFT for m in NF4_MIDS]
    assert all(n.denominator == 1 and n < 2**32 for n in out)
    return [int(n) for n in out]


_N_MIDS = len(NF4_MIDS)
_NEGATIVE_MIDS = sum(m < 0 for m in NF4_MIDS)
_MIDS = ", ".join(f"{n}u" for n in _mid_numerators())

# exact arithmetic on f32 bit patterns (magnitudes: the sign bit already cleared)
EXACT = """fn mant_of(b: u32) -> u32 {
  if ((b >> 23u) == 0u) { return b; }
  return (b & 0x7fffffu) | 0x800000u;
}
fn exp_of(b: u32) -> i32 { return max(i32(b >> 23u), 1) - 150; }
fn mul64(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), hi);
}
fn bitlen64(p: vec2<u32>) -> i32 {
  if (p.y != 0u) { return 33 + i32(firstLeadingBit(p.y)); }
  if (p.x != 0u) { return 1 + i32(firstLeadingBit(p.x)); }
  return 0;
}
fn shl64(p: vec2<u32>, s: u32) -> vec2<u32> {
  if (s == 0u) { return p; }
  if (s >= 32u) { return vec2<u32>(0u, p.x << (s - 32u)); }
  return vec2<u32>(p.x << s, (p.y << s) | (p.x >> (32u - s)));
}
fn cmp64(a: vec2<u32>, b: vec2<u32>) -> i32 {
  if (a.y != b.y) { return select(-1, 1, a.y > b.y); }
  if (a.x != b.x) { return select(-1, 1, a.x > b.x); }
  return 0;
}
// the sign of p * 2^ep - q * 2^eq: equal leading bits, then the aligned words
fn cmp_scaled(p: vec2<u32>, ep: i32, q: vec2<u32>, eq: i32) -> i32 {
  let lp = bitlen64(p); let lq = bitlen64(q);
  if (lp == 0 || lq == 0) { return select(0, 1, lp > 0) - select(0, 1, lq > 0); }
  if (lp + ep != lq + eq) { return select(-1, 1, lp + ep > lq + eq); }
  if (lp >= lq) { return cmp64(p, shl64(q, u32(lp - lq))); }
  return cmp64(shl64(p, u32(lq - lp)), q);
}"""

# the f32 nearest b / 127 (b the bits of a finite non-negative f32), as bits
DIV127 = """fn round_shift(q: u32, sticky: bool, d: u32) -> u32 {
  if (d >= 32u) { return 0u; }
  let m = q >> d; let rem = q & ((1u << d) - 1u); let half = 1u << (d - 1u);
  return m + select(0u, 1u, rem > half || (rem == half && (sticky || (m & 1u) == 1u)));
}
fn div127(b: u32) -> u32 {
  if (b == 0u) { return 0u; }
  var mt = mant_of(b); let sh = 23u - firstLeadingBit(mt); mt = mt << sh;
  let eb = max(i32(b >> 23u), 1) - i32(sh);
  let q = (mt << 8u) / 127u; let sticky = (mt << 8u) % 127u != 0u;
  let len = i32(firstLeadingBit(q)) + 1;
  let e = eb + len - 32;  // the result's biased exponent
  if (e < 1) { return round_shift(q, sticky, u32(9 - eb)); }  // subnormal
  var m = round_shift(q, sticky, u32(len - 24)); var eo = e;
  if (m == 0x1000000u) { m = 0x800000u; eo += 1; }
  return (u32(eo) << 23u) | (m & 0x7fffffu);
}"""

CODE = {
    "int8": """fn half_step_below(j: u32, mt: u32, et: i32, rhs: vec2<u32>, ev: i32) -> i32 {
  return cmp_scaled(mul64(2u * j + 1u, mt), et, rhs, ev);
}
fn code_of(vb: u32, tb: u32) -> u32 {
  let va = vb & 0x7fffffffu;
  if (tb == 0u || va == 0u) { return 0u; }
  let mt = mant_of(tb); let et = exp_of(tb);
  let rhs = mul64(254u, mant_of(va)); let ev = exp_of(va);
  var lo = 0u; var hi = 127u;
  while (lo < hi) {
    let mid = (lo + hi) / 2u;
    if (half_step_below(mid, mt, et, rhs, ev) < 0) { lo = mid + 1u; } else { hi = mid; }
  }
  var c = lo;  // exactly c + 1/2: to the even neighbour
  if (c < 127u && (c & 1u) == 1u && half_step_below(c, mt, et, rhs, ev) == 0) { c += 1u; }
  return u32(select(i32(c), -i32(c), (vb >> 31u) == 1u)) & 255u;
}""",
    "nf4": f"""var<private> MIDS: array<u32, {_N_MIDS}> = array<u32, {_N_MIDS}>({_MIDS});
// NF4_MIDS[k] * top < v, exactly
fn mid_below(k: u32, vb: u32, mt: u32, et: i32) -> bool {{
  let va = vb & 0x7fffffffu;
  let v_neg = (vb >> 31u) == 1u && va != 0u;
  let c = cmp_scaled(mul64(MIDS[k], mt), et - {MID_SHIFT}, vec2<u32>(mant_of(va), 0u), exp_of(va));
  if (k >= {_NEGATIVE_MIDS}u) {{ return !v_neg && va != 0u && c < 0; }}
  return !v_neg || c > 0;
}}
fn code_of(vb: u32, tb: u32) -> u32 {{
  if (tb == 0u) {{ return {_NEGATIVE_MIDS}u; }}  // an all-zero block: the zero level
  let mt = mant_of(tb); let et = exp_of(tb);
  var lo = 0u; var hi = {_N_MIDS}u;
  while (lo < hi) {{
    let mid = (lo + hi) / 2u;
    if (mid_below(mid, vb, mt, et)) {{ lo = mid + 1u; }} else {{ hi = mid; }}
  }}
  return lo;
}}""",
}


def _spec(ins, attrs) -> QuantSpec:
    for v in ins:
        if not _contiguous(v):
            raise DeviceError("quantising on WebGPU takes contiguous tensors")
    return QuantSpec(attrs["fmt"], attrs["rows"], attrs["cols"], attrs["block"])


def _group(spec: QuantSpec) -> int:
    return spec.cols if spec.fmt == "int8" else spec.block


def absmax_kernel(src: Source, op: str, ins, outs, attrs):
    spec = _spec(ins, attrs)
    src.add_meta(spec.n_scales, ins[0].offset, _group(spec), spec.numel, outs[0].offset)
    src.operand("w", ins[0])
    src.operand("o", outs[0], write=True)
    src.fns += [EXACT, DIV127]
    top = "div127(m)" if attrs["div"] == 127 else "m"
    src.body = main_1d(
        "  let e0 = i * mt[2u]; let e1 = min(e0 + mt[2u], mt[3u]); var m = 0u;\n"
        "  for (var e = e0; e < e1; e++) {\n"
        "    m = max(m, bitcast<u32>(ld_w(mt[1u] + e)) & 0x7fffffffu);\n  }\n"
        f"  st_o(mt[4u] + i, bitcast<f32>({top}));"
    )
    return grid_1d(spec.n_scales, src.limits)


def codes_kernel(src: Source, op: str, ins, outs, attrs):
    spec = _spec(ins, attrs)
    w, tops = ins
    per = CODES_PER_WORD[spec.fmt]
    src.add_meta(spec.n_words, w.offset, tops.offset, spec.numel, _group(spec), outs[0].offset)
    src.operand("w", w)
    src.operand("tops", tops)
    src.operand("o", outs[0], write=True)
    src.fns += [EXACT, CODE[spec.fmt]]
    src.body = main_1d(
        f"  var word = 0u;\n  for (var j = 0u; j < {per}u; j++) {{\n"
        f"    let e = i * {per}u + j;\n    if (e < mt[3u]) {{\n"
        "      let t = bitcast<u32>(ld_tops(mt[2u] + e / mt[4u])) & 0x7fffffffu;\n"
        f"      word |= code_of(bitcast<u32>(ld_w(mt[1u] + e)), t) << (j * {32 // per}u);\n"
        "    }\n  }\n  st_o(mt[5u] + i, word);"
    )
    return grid_1d(spec.n_words, src.limits)


def dequantize_kernel(src: Source, op: str, ins, outs, attrs):
    """One invocation per element of W: the qmatmul kernels' decoder, stored."""
    spec = _spec(ins, attrs)
    src.add_meta(spec.numel, _group(spec), outs[0].offset)
    src.operand("codes", ins[0])
    src.operand("scales", ins[1])
    src.operand("o", outs[0], write=True)
    src.fns.append(_decoder(spec.fmt, group_at=1))
    src.body = main_1d("  st_o(mt[2u] + i, ld_b(i));")
    return grid_1d(spec.numel, src.limits)


# an f16's bits to the f32 of the same value, by hand: unpack2x16float may flush
# subnormal halves to zero, and every half is exactly an f32
WIDEN = """
fn widen_half(h: u32) -> f32 {
  let sign = (h >> 15u) << 31u; let e = (h >> 10u) & 31u; let m = h & 1023u;
  if (e == 0u) {  // zero or subnormal: m * 2^-24, exact (a normal f32 or zero)
    let v = f32(m) * 5.9604644775390625e-8;
    return select(v, -v, sign != 0u);
  }
  if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }  // inf, NaN
  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}"""


def widen_kernel(src: Source, op: str, ins, outs, attrs):
    """One invocation per value: its half of a word, widened."""
    for v in ins:
        if not _contiguous(v):
            raise DeviceError("widen_f16 on WebGPU takes contiguous words")
    src.add_meta(attrs["n"], ins[0].offset, outs[0].offset)
    src.operand("w", ins[0])
    src.operand("o", outs[0], write=True)
    src.fns.append(WIDEN)
    src.body = main_1d(
        "  let word = ld_w(mt[1u] + i / 2u);\n"
        "  st_o(mt[2u] + i, widen_half((word >> ((i % 2u) * 16u)) & 0xffffu));"
    )
    return grid_1d(attrs["n"], src.limits)


KERNELS = {
    "widen_f16": widen_kernel,
    "quant_absmax": absmax_kernel,
    "quant_codes": codes_kernel,
    "dequantize": dequantize_kernel,
}
