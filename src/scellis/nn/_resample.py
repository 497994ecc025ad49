"""torch's F.interpolate (nearest, nearest-exact, linear, bilinear, trilinear) and
F.pad's reflect / replicate / circular modes (nn layer).

Both gather along one axis at a time with positions computed here in Python (the
sizes are static), so the gradient is the gather's scatter-add on every device. Linear
modes are separable: one lerp per spatial axis.
"""

from __future__ import annotations

import math

from ..base.errors import ScellisError
from ..catalog.blocks.image_ops import adaptive_pool
from ..runtime.factories import as_tensor
from ..runtime.tensor import Tensor

MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area")
_LINEAR_RANK = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _indices(values: list[int], like: Tensor) -> Tensor:
    return as_tensor(values, dtype="i32", device=like.device.name)


def _along(x: Tensor, axis: int, positions: list[int]) -> Tensor:
    return x.take(_indices(positions, x), axis)


def _sizes(x, size, scale_factor, spatial, recompute):
    """Output sizes and the source-per-output scale torch uses on each axis."""
    dims = list(x.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ScellisError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        out = list(size) if isinstance(size, (tuple, list)) else [size] * spatial
        return [int(o) for o in out], [d / o for d, o in zip(dims, out, strict=True)]
    sf = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * spatial
    out = [int(math.floor(d * f)) for d, f in zip(dims, sf, strict=True)]
    scales = [d / o for d, o in zip(dims, out, strict=True)] if recompute else [1.0 / f for f in sf]
    return out, scales


def _nearest(x, axis, n_out, scale, exact):
    n = x.shape[axis]
    shift = 0.5 if exact else 0.0
    pos = [min(int(math.floor((i + shift) * scale)), n - 1) for i in range(n_out)]
    return _along(x, axis, pos)


def _linear(x, axis, n_out, scale, align_corners):
    n = x.shape[axis]
    lo, hi, frac = [], [], []
    for i in range(n_out):
        if align_corners:
            src = i * (n - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((i + 0.5) * scale - 0.5, 0.0)
        i0 = min(int(math.floor(src)), n - 1)
        lo.append(i0)
        hi.append(min(i0 + 1, n - 1))
        frac.append(src - i0)
    shape = [1] * x.ndim
    shape[axis] = n_out
    w = as_tensor(frac, dtype=x.dtype.name, device=x.device.name).reshape(shape)
    a, b = _along(x, axis, lo), _along(x, axis, hi)
    return a + (b - a) * w


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Tensor:  # fmt: skip
    """torch's F.interpolate over the trailing spatial axes of [B, C, ...]."""
    if mode not in MODES:
        raise ScellisError(f"interpolate: mode {mode!r} is not supported; use one of {MODES}")
    if antialias:
        raise ScellisError("interpolate: antialias=True is not supported")
    spatial = input.ndim - 2
    linear = mode in _LINEAR_RANK
    if linear and _LINEAR_RANK[mode] != spatial:
        raise ScellisError(f"interpolate: mode {mode!r} takes {_LINEAR_RANK[mode] + 2}-d input, "
                           f"got {input.ndim}-d")  # fmt: skip
    if align_corners is not None and not linear:
        raise ScellisError("interpolate: align_corners only applies to the linear modes")
    out, scales = _sizes(input, size, scale_factor, spatial, bool(recompute_scale_factor))
    if mode == "area":  # torch's area mode is adaptive average pooling to the size
        for a in range(spatial):
            input = adaptive_pool(input, a + 2, out[a], "avg")
        return input
    y = input
    for a in range(spatial):
        if linear:
            y = _linear(y, a + 2, out[a], scales[a], bool(align_corners))
        else:
            y = _nearest(y, a + 2, out[a], scales[a], mode == "nearest-exact")
    return y


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def _source(i: int, n: int, mode: str) -> int:
    if mode == "reflect":
        period = 2 * (n - 1)
        i = abs(i) % period if period else 0
        return period - i if i >= n else i
    if mode == "replicate":
        return min(max(i, 0), n - 1)
    return i % n  # circular


def pad_by_index(x: Tensor, lo: list[int], hi: list[int], mode: str) -> Tensor:
    """``x`` padded per axis by ``lo``/``hi`` positions taken from inside it."""
    for axis in range(x.ndim):
        before, after = lo[axis], hi[axis]
        if not before and not after:
            continue
        n = x.shape[axis]
        if mode == "reflect" and max(before, after) >= n:
            raise ScellisError(f"F.pad: reflect padding of {max(before, after)} needs more than "
                               f"{n} positions on dim {axis}")  # fmt: skip
        if mode == "circular" and max(before, after) > n:
            raise ScellisError(f"F.pad: circular padding of {max(before, after)} exceeds size "
                               f"{n} of dim {axis}")  # fmt: skip
        x = _along(x, axis, [_source(i, n, mode) for i in range(-before, n + after)])
    return x
