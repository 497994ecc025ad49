"""Quantised weights in NumPy (devices layer): the reference device's decoding of
``base.quant``'s layout, and the qmatmul kernel that is the oracle for the WGSL one."""

from __future__ import annotations

import numpy as np

from ...base.quant import CODES_PER_WORD, NF4, QuantSpec

_NF4 = np.asarray(NF4, dtype=np.float32)


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


def qmatmul(xs, attrs, out):
    x, words, scales = xs
    spec = QuantSpec(attrs["fmt"], attrs["rows"], attrs["cols"], attrs["block"])
    w = dequantize(words, scales, spec)
    w = w if attrs["trans"] else w.T
    if x.dtype == np.float16:
        return np.matmul(x.astype(np.float32), w)
    return np.matmul(x, w.astype(x.dtype))
