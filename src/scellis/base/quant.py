"""Quantised storage of frozen weights (base layer): int8 and NF4 codes, pure Python.

A frozen weight W [rows, cols] is stored as packed codes in u32 words plus f32 scales,
element i of W's row-major order (i = r * cols + c) being

- ``int8``: a signed byte, 4 per word (element i at bits 8 * (i % 4) of word i // 4),
  scaled per output channel (row): W[r, c] ~ code * scales[r], scales[r] = max|W[r]| / 127,
  code = round(127 W[r, c] / max|W[r]|), half to even;
- ``nf4``: a 4-bit index into the 16 NormalFloat levels of QLoRA (Dettmers et al. 2023),
  8 per word (bits 4 * (i % 8) of word i // 8), scaled per block of ``block`` consecutive
  elements: W_i ~ NF4[code_i] * scales[i // block], scales[b] = max|W| over block b,
  code_i the nearest level to W_i / scales[b] (exactly halfway: the lower one).

Each code is the one the exact quotient picks (every quotient here is a single f64
rounding of f32 values, which never moves it across a midpoint but onto it only when it
is exactly there), so any device reproduces it bit for bit with exact arithmetic; a
scale is the f32 nearest to max|W| / 127 (or max|W| itself).

Double quantisation (QLoRA's, NF4 only): the NF4 block scales are themselves stored as
int8 codes in rows of ``DQ_GROUP`` (256) scales, each row with one f32 scale (max / 127;
the scales are non-negative, so 128 levels), the last row padded with zero scales:
8 bits per block instead of 32, 4.127 bits per weight instead of 4.5.

Blocks run over the flattened weight, so a shape that is no multiple of the block size
needs no special case: the last block is partial (its scale is over its own elements)
and the word holding the last codes is padded with zero codes, which no kernel reads.
Every kernel (the reference device's NumPy, the WGSL matmul variant) decodes exactly
this layout; this module is the one place that writes it.
"""

from __future__ import annotations

import array
import bisect
from dataclasses import dataclass
from statistics import NormalDist

from .errors import ScellisError

FORMATS = ("nf4", "int8")
DEFAULT_BLOCK = 64
MAX_BLOCK = 1 << 16  # a block is decoded whole: past this it only pads (QLoRA uses 64)
DQ_GROUP = 256  # NF4 block scales per second-level scale under double quantisation
CODES_PER_WORD = {"nf4": 8, "int8": 4}
# the offset QLoRA picks so the largest level is the N(0,1) quantile at 1 - 1/2(1/32 + 1/30)
NF4_OFFSET = 0.9677083


def _nf4_levels() -> tuple[float, ...]:
    """The 16 NF4 levels: 8 positive and 7 negative N(0,1) quantiles, zero, scaled to
    [-1, 1] (bitsandbytes' ``create_normal_map``), each rounded to f32 as stored."""
    ppf = NormalDist().inv_cdf

    def spaced(n: int) -> list[float]:
        return [NF4_OFFSET + (0.5 - NF4_OFFSET) * i / (n - 1) for i in range(n - 1)]

    pos = [ppf(p) for p in spaced(9)]
    neg = [-ppf(p) for p in spaced(8)]
    levels = sorted(pos + neg + [0.0])
    top = max(levels)
    return tuple(array.array("f", [v / top for v in levels]))


NF4 = _nf4_levels()
# the decision points between neighbouring levels, exact in f64 (an f32 sum, halved)
NF4_MIDS = tuple((a + b) / 2 for a, b in zip(NF4, NF4[1:]))


@dataclass(frozen=True)
class QuantSpec:
    """How one weight [rows, cols] is stored: its format and (nf4) block size."""

    fmt: str
    rows: int
    cols: int
    block: int = DEFAULT_BLOCK
    double_quant: bool = False  # the NF4 block scales stored as int8 (``scale_spec``)

    def __post_init__(self):
        check_format(self.fmt, self.block, self.double_quant)

    @property
    def numel(self) -> int:
        return self.rows * self.cols

    @property
    def n_words(self) -> int:
        return -(-self.numel // CODES_PER_WORD[self.fmt])

    @property
    def n_scales(self) -> int:
        return self.rows if self.fmt == "int8" else -(-self.numel // self.block)

    @property
    def scale_spec(self) -> QuantSpec:
        """How the block scales are stored under double quantisation: int8 rows of
        DQ_GROUP scales (zero-padded), one f32 scale per row."""
        return QuantSpec("int8", -(-self.n_scales // DQ_GROUP), DQ_GROUP)

    @property
    def nbytes(self) -> int:
        """Bytes of the codes and the scales (u32 words, f32 scales, or their codes)."""
        scales = self.scale_spec.nbytes if self.double_quant else 4 * self.n_scales
        return 4 * self.n_words + scales

    def attrs(self) -> dict:
        """The attributes of the ops that read this weight's codes and (f32) scales."""
        return {"fmt": self.fmt, "rows": self.rows, "cols": self.cols, "block": self.block}


def check_format(fmt, block=DEFAULT_BLOCK, double_quant=False) -> None:
    if fmt not in FORMATS:
        raise ScellisError(f"quantize_base is one of {', '.join(FORMATS)}, not {fmt!r}")
    if not isinstance(block, int) or isinstance(block, bool) or block % 8:
        raise ScellisError(f"the nf4 block size is a multiple of 8 (e.g. 64), not {block!r:.40}")
    if not 8 <= block <= MAX_BLOCK:
        raise ScellisError(
            f"the nf4 block size is a multiple of 8 from 8 to {MAX_BLOCK}, not {block}"
        )
    if not isinstance(double_quant, bool):
        raise ScellisError(f"double_quant is true or false, not {double_quant!r}")
    if double_quant and fmt != "nf4":
        raise ScellisError("double_quant quantises NF4's block scales; int8 has one per row")


def _nf4_code(v: float) -> int:
    return bisect.bisect_left(NF4_MIDS, v)  # the nearest level (midpoints sorted)


def quantize(values, spec: QuantSpec) -> tuple[array.array, array.array]:
    """(u32 words, f32 scales) of W's row-major ``values`` (``spec.numel`` floats)."""
    if len(values) != spec.numel:
        raise ScellisError(f"quantize: {len(values)} values for a {spec.rows}x{spec.cols} weight")
    groups = spec.cols if spec.fmt == "int8" else spec.block
    per_word = CODES_PER_WORD[spec.fmt]
    scales = array.array("f")
    codes = array.array("B", bytes(spec.n_words * per_word))
    for g0 in range(0, spec.numel, groups):
        chunk = values[g0 : g0 + groups]
        top = max((abs(v) for v in chunk), default=0.0)
        scales.append(top / 127.0 if spec.fmt == "int8" else top)
        div = top or 1.0
        for j, v in enumerate(chunk):
            if spec.fmt == "int8":
                # one rounding of the exact 127 v / top (Python's round: half to even)
                codes[g0 + j] = max(-127, min(127, round(v * 127.0 / div))) & 0xFF
            else:
                codes[g0 + j] = _nf4_code(v / div)
    return pack(codes, spec.fmt), scales


def pack(codes, fmt: str) -> array.array:
    """Codes (one per element, whole words' worth) into u32 words, lowest bits first."""
    per_word, bits = CODES_PER_WORD[fmt], 32 // CODES_PER_WORD[fmt]
    words = array.array("I")
    for w0 in range(0, len(codes), per_word):
        word = 0
        for j in range(per_word):
            word |= codes[w0 + j] << (bits * j)
        words.append(word)
    return words


def dequantize(words, scales, spec: QuantSpec) -> list[float]:
    """W's row-major values from its words and scales (the layout in the module doc)."""
    per_word, bits = CODES_PER_WORD[spec.fmt], 32 // CODES_PER_WORD[spec.fmt]
    mask = (1 << bits) - 1
    out = []
    for i in range(spec.numel):
        code = (words[i // per_word] >> (bits * (i % per_word))) & mask
        if spec.fmt == "int8":
            out.append((code - 256 if code > 127 else code) * scales[i // spec.cols])
        else:
            out.append(NF4[code] * scales[i // spec.block])
    return out


def double_quantize(scales, spec: QuantSpec) -> tuple[array.array, array.array]:
    """(u32 words, f32 row scales) of NF4 block ``scales`` under double quantisation."""
    inner = spec.scale_spec
    return quantize(list(scales) + [0.0] * (inner.numel - len(scales)), inner)


def describe(spec: QuantSpec) -> str:
    how = "per output channel" if spec.fmt == "int8" else f"per block of {spec.block}"
    how += ", block scales as int8" if spec.double_quant else ""
    return f"{spec.fmt} ({how}, {spec.nbytes:,} bytes of codes and scales)"


__all__ = [
    "DEFAULT_BLOCK",
    "DQ_GROUP",
    "FORMATS",
    "NF4",
    "NF4_MIDS",
    "QuantSpec",
    "dequantize",
    "double_quantize",
    "quantize",
]
