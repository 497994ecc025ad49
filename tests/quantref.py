"""An independent NumPy statement of int8 and NF4 quantisation, the tests' oracle.

The NF4 levels are bitsandbytes' published table (``bitsandbytes.functional``'s NF4
code, as printed in the QLoRA paper's appendix), hard-coded rather than derived, so a
slip in the engine's derivation shows. Blocks of ``block`` run over the flattened
weight; the last one may be partial.
"""

from __future__ import annotations

import numpy as np

NF4_PUBLISHED = np.array(
    [
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
        0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
    ],
    dtype=np.float32,
)  # fmt: skip


def nf4_round_trip(w: np.ndarray, block: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(dequantised w, absmax per block): nearest level of w / absmax, times absmax."""
    flat = w.astype(np.float32).reshape(-1)
    out = np.empty_like(flat)
    absmax = []
    for b0 in range(0, flat.size, block):
        x = flat[b0 : b0 + block]
        top = np.float32(np.abs(x).max())
        absmax.append(top)
        norm = x / (top if top else np.float32(1))
        codes = np.abs(norm[:, None] - NF4_PUBLISHED[None, :]).argmin(1)
        out[b0 : b0 + block] = NF4_PUBLISHED[codes] * top
    return out.reshape(w.shape), np.array(absmax, dtype=np.float32)


def int8_round_trip(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(dequantised w, scale per row): round(w / s) clipped to +-127, times s."""
    w = w.astype(np.float32)
    s = np.abs(w).max(1) / np.float32(127)
    q = np.clip(np.round(w / np.where(s == 0, 1, s)[:, None]), -127, 127)
    return (q * s[:, None]).astype(np.float32), s
