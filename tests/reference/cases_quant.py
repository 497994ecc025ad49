"""Op cases, quantised matmul: x @ W^T and x @ W with W stored as int8 or NF4 codes.

W is fixed per row (drawn once, quantised by the engine); the torch twin multiplies by
the tests' own NumPy dequantisation of the same W (``quantref``), so the row checks the
kernel's decoding and the input's gradient (W is frozen: codes get none).
"""

from __future__ import annotations

import numpy as np
import torch

import scellis as sc
from helpers import Case
from inputs import N
from quantref import NF4_PUBLISHED, int8_round_trip, nf4_round_trip
from scellis.base.quant import DQ_GROUP, QuantSpec, double_quantize, quantize

ROWS, COLS = 5, 13  # 65 elements: one full NF4 block of 64 and a partial one


def _weight(fmt: str):
    w = np.random.default_rng(7).standard_normal((ROWS, COLS)).astype(np.float32)
    spec = QuantSpec(fmt, ROWS, COLS, 64)
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    deq = nf4_round_trip(w)[0] if fmt == "nf4" else int8_round_trip(w)[0]
    return spec, np.frombuffer(words.tobytes(), np.uint32), np.frombuffer(scales, np.float32), deq


def _case(fmt: str, trans: bool) -> Case:
    spec, words, scales, deq = _weight(fmt)
    k = ROWS if trans else COLS

    def fn(x):
        codes = sc.tensor(words, device=x.device)
        s = sc.tensor(scales, device=x.device)
        return x.qmatmul(codes, s, **spec.attrs(), trans=trans)

    def twin(x):
        w = torch.from_numpy(deq).to(x.dtype)
        return x @ w if trans else x @ w.T

    return Case(f"qmatmul_{fmt}{'_t' if trans else ''}", fn, twin, [N((3, k))])


def _double_case(trans: bool) -> Case:
    """NF4 with double-quantised block scales: the kernel decodes each scale from its
    int8 code; the twin uses the tests' own int8 round trip of the scales."""
    spec, words, scales, _ = _weight("nf4")
    scale_words, scale_rows = double_quantize(scales, spec)
    padded = np.zeros(DQ_GROUP, np.float32)
    padded[: spec.n_scales] = scales
    decoded = int8_round_trip(padded.reshape(1, -1))[0].reshape(-1)[: spec.n_scales]
    flat = np.random.default_rng(7).standard_normal(ROWS * COLS).astype(np.float32)
    per_elem = np.repeat(scales, 64)[: flat.size]  # the nearest published level of each
    levels = NF4_PUBLISHED[np.abs((flat / per_elem)[:, None] - NF4_PUBLISHED).argmin(1)]
    deq = (levels * np.repeat(decoded, 64)[: flat.size]).reshape(ROWS, COLS)
    k = ROWS if trans else COLS

    def fn(x):
        codes = sc.tensor(words, device=x.device)
        sw = sc.tensor(np.frombuffer(scale_words.tobytes(), np.uint32), device=x.device)
        sr = sc.tensor(np.frombuffer(scale_rows.tobytes(), np.float32), device=x.device)
        return x.qmatmul(codes, (sw, sr), **spec.attrs(), trans=trans)

    def twin(x):
        wt = torch.from_numpy(deq).to(x.dtype)
        return x @ wt if trans else x @ wt.T

    return Case(f"qmatmul_nf4_dq{'_t' if trans else ''}", fn, twin, [N((3, k))])


CASES = [_case(fmt, trans) for fmt in ("nf4", "int8") for trans in (False, True)]
CASES += [_double_case(trans) for trans in (False, True)]
