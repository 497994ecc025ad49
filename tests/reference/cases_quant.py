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
from quantref import int8_round_trip, nf4_round_trip
from scellis.base.quant import QuantSpec, quantize

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


CASES = [_case(fmt, trans) for fmt in ("nf4", "int8") for trans in (False, True)]
