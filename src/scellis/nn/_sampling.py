"""torch's F.affine_grid and F.grid_sample (bilinear or nearest; zeros or border
padding) on [N, C, H, W] (nn layer), as in the spatial transformer tutorial.

The sampled positions depend on the data, so the four neighbours are found with a
floor written from casts and gathered from the flattened image: the input's gradient
is the gather's scatter-add, the grid's flows through the bilinear weights, as torch's.
"""

from __future__ import annotations

from ..base.errors import ScellisError
from ..runtime.factories import as_tensor
from ..runtime.tensor import Tensor


def _axis_points(n: int, align_corners: bool) -> list[float]:
    if align_corners:
        return [-1.0 + 2.0 * i / (n - 1) if n > 1 else 0.0 for i in range(n)]
    return [(2.0 * i + 1.0) / n - 1.0 for i in range(n)]


def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """Sampling positions [N, H, W, 2] (x, y in [-1, 1]) of ``theta`` [N, 2, 3] applied
    to a regular grid of ``size`` = (N, C, H, W)."""
    if len(size) != 4 or theta.ndim != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise ScellisError("affine_grid: theta [N, 2, 3] and a 4-d size are supported")
    n, _, h, w = (int(s) for s in size)
    xs, ys = _axis_points(w, bool(align_corners)), _axis_points(h, bool(align_corners))
    base = [[x, y, 1.0] for y in ys for x in xs]
    grid = as_tensor(base, dtype=theta.dtype.name, device=theta.device.name)  # [H*W, 3]
    return (grid.unsqueeze(0) @ theta.mT).reshape(n, h, w, 2)


def _floor(x: Tensor) -> Tensor:
    t = x.cast("i32").cast(x.dtype)  # toward zero
    return t - (t > x).cast(x.dtype)


def _round_half_even(x: Tensor) -> Tensor:
    r = _floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - _floor(r * 0.5) * 2.0) == 1.0
    return r - tie.logical_and(odd).cast(x.dtype)


def _unnormalise(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    # torch's order of operations, so positions near a rounding boundary round alike
    if align_corners:
        return ((coord + 1.0) * 0.5) * float(size - 1)
    return ((coord + 1.0) * float(size) - 1.0) * 0.5


def _pick(flat: Tensor, xi: Tensor, yi: Tensor, h: int, w: int) -> tuple[Tensor, Tensor]:
    """Values of ``flat`` [N, C, H*W] at integer positions (xi, yi) [N, L] and whether
    each lies inside the image (outside ones read position 0)."""
    inside = (xi >= 0).logical_and(xi <= w - 1).logical_and(yi >= 0).logical_and(yi <= h - 1)
    idx = (yi.clamp(0, h - 1) * w + xi.clamp(0, w - 1)).cast("i32")
    n, c, _ = flat.shape
    picked = flat.gather(idx.unsqueeze(1).expand((n, c, idx.shape[1])), 2)
    return picked, inside.cast(flat.dtype).unsqueeze(1)


def grid_sample(input: Tensor, grid: Tensor, mode="bilinear", padding_mode="zeros",
                align_corners=None) -> Tensor:  # fmt: skip
    """``input`` [N, C, H, W] read at ``grid`` [N, Ho, Wo, 2] positions (x, y in [-1, 1])."""
    if mode not in ("bilinear", "nearest"):
        raise ScellisError(f"grid_sample: mode {mode!r} is not supported; use bilinear or nearest")
    if padding_mode not in ("zeros", "border"):
        raise ScellisError(f"grid_sample: padding_mode {padding_mode!r} is not supported; "
                           "use zeros or border")  # fmt: skip
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise ScellisError("grid_sample: 4-d input [N, C, H, W] and grid [N, Ho, Wo, 2]")
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    g = grid.reshape(n, ho * wo, 2)
    ix = _unnormalise(g.slice([0, 0, 0], [n, ho * wo, 1]).reshape(n, ho * wo), w,
                      bool(align_corners))  # fmt: skip
    iy = _unnormalise(g.slice([0, 0, 1], [n, ho * wo, 2]).reshape(n, ho * wo), h,
                      bool(align_corners))  # fmt: skip
    if padding_mode == "border":
        ix, iy = ix.clamp(0.0, w - 1.0), iy.clamp(0.0, h - 1.0)
    flat = input.reshape(n, c, h * w)
    if mode == "nearest":
        val, inside = _pick(flat, _round_half_even(ix.detach()), _round_half_even(iy.detach()),
                            h, w)  # fmt: skip
        # torch gives the grid a zero gradient here (the positions are rounded)
        return (val * inside).reshape(n, c, ho, wo) + g.sum() * 0.0
    x0, y0 = _floor(ix.detach()), _floor(iy.detach())
    fx, fy = ix - x0, iy - y0
    out = None
    for dx, dy, wgt in ((0, 0, (1.0 - fx) * (1.0 - fy)), (1, 0, fx * (1.0 - fy)),
                        (0, 1, (1.0 - fx) * fy), (1, 1, fx * fy)):  # fmt: skip
        val, inside = _pick(flat, x0 + dx, y0 + dy, h, w)
        term = val * (wgt.unsqueeze(1) * inside)
        out = term if out is None else out + term
    return out.reshape(n, c, ho, wo)
