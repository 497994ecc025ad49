"""Quantising a weight on its device (ops layer): the two primitives behind ``quantize_base``.

``quant_absmax`` gives max|W| over each group of the layout (a row for int8, a block for
NF4), divided by ``div`` and rounded once to f32: ``div`` 1 gives the tops the codes are
decided against, 127 the int8 scales. ``quant_codes`` packs W's codes, given those tops.
Both follow ``base.quant``'s layout and rounding exactly, so every device writes the
words and scales the pure-Python ``base.quant.quantize`` writes, without reading W back.
``dequantize`` is the way back: W [rows, cols] in f32, each element its code times its
scale (one rounding), as the qmatmul kernels decode it; it decodes double-quantised
block scales at each forward and a weight for an export.

``widen_f16`` reads half-precision values packed two to a u32 word (little-endian: the
first value in the low half) and writes them in f32, exactly: a float16 checkpoint goes
up to a device whose shaders read no f16 (a browser's WebGPU without shader-f16) at half
the bytes, and is widened there rather than on the host.
"""

from __future__ import annotations

from ..base.dtypes import f32, u32
from ..base.errors import DTypeError, ShapeError
from ..base.quant import QuantSpec
from .table import OpDef, Spec, register

ATTRS = ("fmt", "rows", "cols", "block")


def spec_of(attrs: dict) -> QuantSpec:
    return QuantSpec(attrs["fmt"], attrs["rows"], attrs["cols"], attrs["block"])


def _weight(w: Spec, attrs: dict) -> QuantSpec:
    spec = spec_of(attrs)
    if w.dtype != f32:
        raise DTypeError(f"quantising takes an f32 weight, got {w.dtype}")
    if tuple(w.shape) != (spec.rows, spec.cols):
        raise ShapeError(f"quantising: weight {w.shape} is not [{spec.rows}, {spec.cols}]")
    return spec


def _absmax(specs, attrs):
    spec = _weight(specs[0], attrs)
    if attrs["div"] not in (1, 127):
        raise ShapeError(f"quant_absmax divides by 1 or 127, not {attrs['div']!r}")
    return [Spec((spec.n_scales,), f32)]


def _codes(specs, attrs):
    w, tops = specs
    spec = _weight(w, attrs)
    if tops.dtype != f32 or tuple(tops.shape) != (spec.n_scales,):
        raise ShapeError(f"quant_codes needs {spec.n_scales} f32 tops, got {tops.shape}")
    return [Spec((spec.n_words,), u32)]


register(
    OpDef(
        "quant_absmax", "reduce", 1, _absmax, attrs=(*ATTRS, "div"),
        doc="max|W| over each group of a quantised layout, divided by div (1 or 127)",
    )
)  # fmt: skip
register(
    OpDef(
        "quant_codes", "reduce", 2, _codes, attrs=ATTRS,
        doc="W's int8 or NF4 codes packed in u32 words, given each group's max|W|",
    )
)  # fmt: skip


def _dequantize(specs, attrs):
    codes, scales = specs
    spec = spec_of(attrs)
    if codes.dtype != u32 or scales.dtype != f32:
        raise DTypeError(
            f"dequantize takes u32 codes and f32 scales, got {codes.dtype}, {scales.dtype}"
        )
    if tuple(codes.shape) != (spec.n_words,) or tuple(scales.shape) != (spec.n_scales,):
        raise ShapeError(
            f"dequantize: {codes.shape} codes and {scales.shape} scales for a "
            f"{spec.rows}x{spec.cols} {spec.fmt} weight"
        )
    return [Spec((spec.rows, spec.cols), f32)]


register(
    OpDef(
        "dequantize", "reduce", 2, _dequantize, attrs=ATTRS,
        doc="W in f32 from its int8 or NF4 codes and scales",
    )
)  # fmt: skip


def _widen(specs, attrs):
    (words,) = specs
    n = attrs["n"]
    if words.dtype != u32 or tuple(words.shape) != ((n + 1) // 2,):
        raise ShapeError(
            f"widen_f16 takes {(n + 1) // 2} u32 words for {n} values, got {words.shape}"
        )
    return [Spec((n,), f32)]


register(
    OpDef(
        "widen_f16", "reduce", 1, _widen, attrs=("n",),
        doc="n f16 values packed two to a u32 word (the first in the low half), as f32",
    )
)  # fmt: skip
