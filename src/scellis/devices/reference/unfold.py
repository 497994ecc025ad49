"""Reference kernels for the windows over time (devices layer): unfold and fold in NumPy.

Both walk the taps in increasing order, one strided slice of the padded time axis per
tap; the fold adds the taps' columns into each step in that order (f16 sums in f32 and
rounds once, as the WebGPU kernel does).
"""

from __future__ import annotations

import numpy as np

from ...ops.unfold import windows


def _tap_steps(j: int, n: int, attrs) -> slice:
    """The padded steps tap ``j`` reads, one per window."""
    first = j * attrs["dilation"]
    return slice(first, first + (n - 1) * attrs["stride"] + 1, attrs["stride"])


def _time_unfold(xs, attrs, out):
    x = xs[0]
    b, t, c = x.shape
    size, lo = attrs["size"], attrs["lo"]
    n = windows(t, attrs)
    padded = np.zeros((b, lo + t + attrs["hi"], c), x.dtype)
    padded[:, lo : lo + t] = x
    cols = np.empty((b, n, c, size), x.dtype)
    for j in range(size):
        cols[..., j] = padded[:, _tap_steps(j, n, attrs)]
    return cols.reshape(b, n, c * size)


def _time_fold(xs, attrs, out):
    g = xs[0]
    wide = np.float32 if g.dtype == np.float16 else g.dtype
    b, n, width = g.shape
    size, lo, t = attrs["size"], attrs["lo"], attrs["steps"]
    taps = g.reshape(b, n, width // size, size).astype(wide)
    padded = np.zeros((b, lo + t + attrs["hi"], width // size), wide)
    for j in range(size):
        padded[:, _tap_steps(j, n, attrs)] += taps[..., j]
    return padded[:, lo : lo + t].astype(g.dtype)


KERNELS = {"time_unfold": _time_unfold, "time_fold": _time_fold}
