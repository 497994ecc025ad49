"""Quantised weights in NumPy (devices layer): the reference device's encoding and
decoding of ``base.quant``'s layout, vectorised, and the qmatmul kernel that is the
oracle for the WGSL one.

Encoding repeats ``base.quant.quantize``'s f64 arithmetic element for element (the same
single rounding of each quotient, the same search of the NF4 midpoints), so its words
and scales are bitwise those of the pure-Python code."""

from __future__ import annotations

import numpy as np

from ...base.quant import CODES_PER_WORD, NF4, NF4_MIDS, QuantSpec

_NF4 = np.asarray(NF4, dtype=np.float32)
_NF4_MIDS = np.asarray(NF4_MIDS, dtype=np.float64)


def _spec(attrs) -> QuantSpec:
    return QuantSpec(attrs["fmt"], attrs["rows"], attrs["cols"], attrs["block"])


def _groups(w: np.ndarray, spec: QuantSpec, dtype) -> np.ndarray:
    """W as [groups, group size] in ``dtype``: rows for int8, zero-padded blocks for nf4."""
    flat = np.asarray(w).reshape(-1).astype(dtype, copy=False)
    if spec.fmt == "int8":
        return flat.reshape(spec.rows, spec.cols)
    pad = spec.n_scales * spec.block - spec.numel
    return (np.pad(flat, (0, pad)) if pad else flat).reshape(-1, spec.block)


def quant_absmax(xs, attrs, out):
    # |W| in f32 is exact, so is its max; the division is f64, rounded once to f32
    tops = np.abs(_groups(xs[0], _spec(attrs), np.float32)).max(axis=1, initial=0.0)
    return (tops.astype(np.float64) / attrs["div"]).astype(np.float32)


def _codes(w: np.ndarray, tops: np.ndarray, spec: QuantSpec) -> np.ndarray:
    """One unsigned code per element (int8 as its byte), as ``base.quant.quantize``."""
    v = _groups(w, spec, np.float64)
    top = np.asarray(tops, dtype=np.float64)[:, None]
    div = np.where(top == 0.0, 1.0, top)
    if spec.fmt == "int8":
        q = np.clip(np.rint(v * 127.0 / div), -127, 127).astype(np.int32)
        codes = q.view(np.uint32) & np.uint32(0xFF)
    else:  # bisect_left's answer, the midpoints strictly below: 15 passes beat a search
        q = v / div
        counts = np.zeros(q.shape, np.uint8)
        for mid in _NF4_MIDS:
            counts += q > mid
        codes = counts.astype(np.uint32)
    return codes.reshape(-1)[: spec.numel]


def quant_codes(xs, attrs, out):
    spec = _spec(attrs)
    per_word = CODES_PER_WORD[spec.fmt]
    codes = np.zeros(spec.n_words * per_word, dtype=np.uint32)
    codes[: spec.numel] = _codes(xs[0], xs[1], spec)
    shifts = (np.arange(per_word, dtype=np.uint32) * (32 // per_word)).astype(np.uint32)
    return np.bitwise_or.reduce(codes.reshape(-1, per_word) << shifts, axis=1)


def codes_of(words: np.ndarray, spec: QuantSpec) -> np.ndarray:
    """One unsigned code per element of W, row-major (the padding dropped)."""
    per_word = CODES_PER_WORD[spec.fmt]
    bits = 32 // per_word
    shifts = (np.arange(per_word, dtype=np.uint32) * bits).astype(np.uint32)
    w = np.asarray(words, dtype=np.uint32).reshape(-1, 1)
    return ((w >> shifts) & np.uint32((1 << bits) - 1)).reshape(-1)[: spec.numel]


def dequantize(words: np.ndarray, scales: np.ndarray, spec: QuantSpec) -> np.ndarray:
    """W [rows, cols] as f32: each code's value times its scale."""
    codes = codes_of(words, spec)
    scales = np.asarray(scales, dtype=np.float32)
    if spec.fmt == "int8":
        values = codes.astype(np.uint8).view(np.int8).astype(np.float32)
        w = values.reshape(spec.rows, spec.cols) * scales[:, None]
    else:
        values = _NF4[codes] * scales[np.arange(spec.numel) // spec.block]
        w = values.reshape(spec.rows, spec.cols)
    return w.astype(np.float32)


def dequantize_kernel(xs, attrs, out):
    return dequantize(xs[0], xs[1], _spec(attrs))


def qmatmul(xs, attrs, out):
    x, words, *scales = xs
    spec = QuantSpec(attrs["fmt"], attrs["rows"], attrs["cols"], attrs["block"])
    if len(scales) == 2:  # double-quantised block scales: decoded first
        inner = QuantSpec(spec.fmt, spec.rows, spec.cols, spec.block, True).scale_spec
        scales = [dequantize(*scales, inner).reshape(-1)[: spec.n_scales]]
    scales = scales[0]
    w = dequantize(words, scales, spec)
    w = w if attrs["trans"] else w.T
    if x.dtype == np.float16:
        return np.matmul(x.astype(np.float32), w)
    return np.matmul(x, w.astype(x.dtype))


def widen_f16(xs, attrs, out):
    words = np.ascontiguousarray(xs[0], dtype=np.uint32)
    return words.view(np.float16)[: attrs["n"]].astype(np.float32)
