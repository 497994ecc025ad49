"""torch.nn.functional's image ops on [B, C, H, W] (catalog layer): conv2d, its transpose,
pooling (windowed and adaptive), unfold/fold, interpolate and pixel shuffle.

All are compositions of differentiable ops, so autograd and every device come for free:
a convolution is im2col (one strided slice per kernel tap) and one matmul; its
transpose, and ``fold``, place each tap's contribution with an interior-padded ``pad``
and add them up (the adjoint of the slices). Unbatched [C, H, W] inputs are accepted
where torch accepts them.
"""

from __future__ import annotations

from ...base.errors import ScellisError, ShapeError
from ...ops import composites as C
from ...runtime.tensor import Tensor
from .common import MASKED


def pair(v, what: str = "size") -> tuple[int, int]:
    """torch's ``k`` or ``(kh, kw)``."""
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ScellisError(f"{what} must be an int or a pair, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def no_indices(where: str) -> ScellisError:
    return ScellisError(f"{where}: return_indices=True is not supported (nor MaxUnpool2d); "
                        "use the pooled values alone")  # fmt: skip


def batched(fn, x: Tensor, spatial: int = 2) -> Tensor:
    """``fn`` on a batched input; an unbatched one gets a batch of one and loses it again."""
    if x.ndim == spatial + 1:
        return fn(x.unsqueeze(0)).squeeze(0)
    if x.ndim != spatial + 2:
        raise ShapeError(f"expected [B, C, {spatial} spatial axes] or unbatched, got {x.shape}")
    return fn(x)


def _out_len(n: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    span = d * (k - 1) + 1
    if n + lo + hi < span:
        raise ShapeError(f"a window of {span} does not fit a size of {n} padded by {lo}+{hi}")
    return (n + lo + hi - span) // s + 1


def windows(x, k, s, d, lo, hi, value=0.0):
    """The kh*kw taps of every window of ``x`` [B, C, H, W], each [B, C, Ho, Wo] (row-major
    over the kernel): tap (i, j) of output (y, z) is input (y*sh + i*dh, z*sw + j*dw) of
    ``x`` padded by ``lo``/``hi`` (per spatial axis) with ``value``."""
    B, Ch, H, W = x.shape
    ho = _out_len(H, k[0], s[0], d[0], lo[0], hi[0])
    wo = _out_len(W, k[1], s[1], d[1], lo[1], hi[1])
    if any(lo) or any(hi):
        x = x.pad([0, 0, lo[0], lo[1]], [0, 0, hi[0], hi[1]], None, value)
    taps = []
    for i in range(k[0]):
        for j in range(k[1]):
            r, c = i * d[0], j * d[1]
            stop = [B, Ch, r + (ho - 1) * s[0] + 1, c + (wo - 1) * s[1] + 1]
            taps.append(x.slice([0, 0, r, c], stop, [1, 1, s[0], s[1]]))
    return taps, ho, wo


def conv_padding(padding, k, d, s) -> tuple[tuple[int, int], tuple[int, int]]:
    """(lo, hi) per spatial axis from torch's ``padding`` (int, pair, 'valid', 'same')."""
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding == "same":
        if s != (1, 1):
            raise ScellisError("padding='same' needs stride 1, as in torch")
        total = [d[a] * (k[a] - 1) for a in range(2)]
        return (total[0] // 2, total[1] // 2), (total[0] - total[0] // 2, total[1] - total[1] // 2)
    if isinstance(padding, str):
        raise ScellisError(f"padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    p = pair(padding, "padding")
    return p, p


def _conv2d(x, weight, bias, stride, padding, dilation, groups):
    c_out, cg, kh, kw = weight.shape
    B, c_in = x.shape[0], x.shape[1]
    if c_in != cg * groups:
        raise ShapeError(f"conv2d: weight {weight.shape} with groups={groups} takes "
                         f"{cg * groups} channels, the input has {c_in}")  # fmt: skip
    s, d = pair(stride, "stride"), pair(dilation, "dilation")
    lo, hi = conv_padding(padding, (kh, kw), d, s)
    taps, ho, wo = windows(x, (kh, kw), s, d, lo, hi)
    k = kh * kw
    cols = C.stack(taps, -1).permute(0, 2, 3, 1, 4)  # [B, Ho, Wo, C_in, k]
    n = B * ho * wo
    if groups == 1:
        y = cols.reshape(n, c_in * k) @ weight.reshape(c_out, c_in * k).mT
    else:
        og = c_out // groups
        u = cols.reshape(n, groups, cg * k).permute(1, 0, 2)
        w = weight.reshape(groups, og, cg * k).permute(0, 2, 1)
        y = (u @ w).permute(1, 0, 2).reshape(n, c_out)
    if bias is not None:
        y = y + bias
    return y.reshape(B, ho, wo, c_out).permute(0, 3, 1, 2)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """torch's F.conv2d: ``weight`` [C_out, C_in/groups, kh, kw]."""
    return batched(lambda x: _conv2d(x, weight, bias, stride, padding, dilation, groups), input)


def place_taps(cols, size, s, d):
    """The adjoint of ``windows``: ``cols`` [B, C, kh, kw, Ho, Wo] summed into a zero
    [B, C, *size] at each tap's strided positions (overlaps add up)."""
    B, ch, kh, kw, ho, wo = cols.shape
    out = None
    for i in range(kh):
        for j in range(kw):
            r, c = i * d[0], j * d[1]
            hi = [0, 0, size[0] - r - (ho - 1) * s[0] - 1, size[1] - c - (wo - 1) * s[1] - 1]
            if min(hi) < 0:
                raise ShapeError(f"taps of {ho}x{wo} windows do not fit an output of {size}")
            tap = cols.slice([0, 0, i, j, 0, 0], [B, ch, i + 1, j + 1, ho, wo])
            piece = tap.reshape(B, ch, ho, wo).pad([0, 0, r, c], hi, [0, 0, s[0] - 1, s[1] - 1])
            out = piece if out is None else out + piece
    return out


def _crop(x, lo, size):
    B, ch = x.shape[0], x.shape[1]
    if lo == (0, 0) and tuple(x.shape[2:]) == tuple(size):
        return x
    return x.slice([0, 0, lo[0], lo[1]], [B, ch, lo[0] + size[0], lo[1] + size[1]])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """torch's F.fold: [B, C*kh*kw, L] blocks summed into [B, C, *output_size]."""
    k, d, p, s = (pair(v) for v in (kernel_size, dilation, padding, stride))
    size = pair(output_size, "output_size")

    def run(x):
        B, ckk, L = x.shape
        ho = _out_len(size[0], k[0], s[0], d[0], p[0], p[0])
        wo = _out_len(size[1], k[1], s[1], d[1], p[1], p[1])
        if ckk % (k[0] * k[1]) or L != ho * wo:
            raise ShapeError(f"fold: input {x.shape} does not hold {k[0]}x{k[1]} blocks at "
                             f"{ho}x{wo} positions")  # fmt: skip
        cols = x.reshape(B, ckk // (k[0] * k[1]), k[0], k[1], ho, wo)
        full = place_taps(cols, (size[0] + 2 * p[0], size[1] + 2 * p[1]), s, d)
        return _crop(full, p, size)

    return batched(run, input, 1)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """torch's F.unfold (im2col): [B, C, H, W] to [B, C*kh*kw, L], channel-major rows."""
    k, d, p, s = (pair(v) for v in (kernel_size, dilation, padding, stride))

    def run(x):
        taps, ho, wo = windows(x, k, s, d, p, p)
        B, ch = x.shape[0], x.shape[1]
        return C.stack(taps, 2).reshape(B, ch * k[0] * k[1], ho * wo)

    return batched(run, input)


def _conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation):
    c_in, og, kh, kw = weight.shape
    B, _, H, W = x.shape
    if x.shape[1] != c_in or c_in % groups:
        raise ShapeError(f"conv_transpose2d: weight {weight.shape} takes {c_in} channels, "
                         f"the input has {x.shape[1]}")  # fmt: skip
    s, d, p = pair(stride, "stride"), pair(dilation, "dilation"), pair(padding, "padding")
    op = pair(output_padding, "output_padding")
    c_out, k, n = og * groups, kh * kw, B * H * W
    rows = x.permute(0, 2, 3, 1).reshape(n, c_in)
    if groups == 1:
        cols = rows @ weight.reshape(c_in, og * k)
    else:
        cg = c_in // groups
        u = rows.reshape(n, groups, cg).permute(1, 0, 2)
        cols = (u @ weight.reshape(groups, cg, og * k)).permute(1, 0, 2)
    cols = cols.reshape(B, H, W, c_out, kh, kw).permute(0, 3, 4, 5, 1, 2)
    full = [(H - 1) * s[0] + d[0] * (kh - 1) + 1, (W - 1) * s[1] + d[1] * (kw - 1) + 1]
    out = [full[a] - 2 * p[a] + op[a] for a in range(2)]
    y = place_taps(cols, (full[0] + op[0], full[1] + op[1]), s, d)
    y = _crop(y, p, out)
    return y if bias is None else y + bias.reshape(1, c_out, 1, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:  # fmt: skip
    """torch's F.conv_transpose2d: ``weight`` [C_in, C_out/groups, kh, kw]."""
    args = (weight, bias, stride, padding, output_padding, groups, dilation)
    return batched(lambda x: _conv_transpose2d(x, *args), input)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1) -> Tensor:  # fmt: skip
    """torch's F.conv_transpose1d, as the 2-d one over a height of 1."""

    def one(v):
        return (1, int(v[0] if isinstance(v, (tuple, list)) else v))

    def run(x):
        y = _conv_transpose2d(x.unsqueeze(2), weight.unsqueeze(2), bias, one(stride),
                              (0, one(padding)[1]), (0, one(output_padding)[1]), groups,
                              one(dilation))  # fmt: skip
        return y.squeeze(2)

    return batched(run, input, 1)


def _pool_geometry(H, W, kernel_size, stride, padding, dilation, ceil_mode):
    k = pair(kernel_size, "kernel_size")
    s = pair(stride if stride not in (None, ()) else kernel_size, "stride")
    p, d = pair(padding, "padding"), pair(dilation, "dilation")
    if p[0] * 2 > k[0] or p[1] * 2 > k[1]:
        raise ScellisError(f"pad should be at most half of the kernel size, got {p} for {k}")
    hi = list(p)
    if ceil_mode:  # torch's extra windows at the end, each starting inside the input
        for a, n in enumerate((H, W)):
            span = d[a] * (k[a] - 1) + 1
            out = -(-(n + 2 * p[a] - span) // s[a]) + 1
            if (out - 1) * s[a] >= n + p[a]:
                out -= 1
            hi[a] = max(p[a], (out - 1) * s[a] + span - n - p[a])
    return k, s, p, d, tuple(hi)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Tensor:  # fmt: skip
    if return_indices:
        raise no_indices("max_pool2d")

    def run(x):
        k, s, p, d, hi = _pool_geometry(*x.shape[2:], kernel_size, stride, padding, dilation,
                                        ceil_mode)  # fmt: skip
        taps, _, _ = windows(x, k, s, d, p, hi, MASKED)
        return C.stack(taps, -1).amax(-1)

    return batched(run, input)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:  # fmt: skip
    """The mean of each window; padding counts unless ``count_include_pad=False``;
    ``ceil_mode`` windows never count what lies past the padded input, as torch's."""

    def run(x):
        H, W = x.shape[2:]
        k, s, p, d, hi = _pool_geometry(H, W, kernel_size, stride, padding, 1, ceil_mode)
        taps, _, _ = windows(x, k, s, d, p, hi)
        total = C.stack(taps, -1).sum(-1)
        if divisor_override:
            return total * (1.0 / divisor_override)
        return total / _window_counts(x, k, s, d, p, hi, count_include_pad)

    return batched(run, input)


def _window_counts(x, k, s, d, p, hi, count_include_pad):
    """Elements each window divides by: the whole kernel, or the part inside the input
    (and its padding, when counted)."""
    H, W = x.shape[2:]
    inner = x.new_ones((1, 1, H, W))
    if count_include_pad:  # padding counts, what ceil_mode adds past it does not
        inner = inner.pad([0, 0, p[0], p[1]], [0, 0, p[0], p[1]], None, 1.0)
        extra = [hi[0] - p[0], hi[1] - p[1]]
        taps, _, _ = windows(inner, k, s, d, (0, 0), extra)
    else:
        taps, _, _ = windows(inner, k, s, d, p, hi)
    return C.stack(taps, -1).sum(-1).detach()


def adaptive_bins(n: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive pooling windows: [floor(i n / out), ceil((i+1) n / out))."""
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


def adaptive_pool(x: Tensor, axis: int, out: int, mode: str) -> Tensor:
    """Adaptive average or max pooling of ``x`` along one axis to ``out`` bins."""
    n = x.shape[axis]
    if out == n:
        return x
    reducer = (lambda t: C.mean(t, axis, keepdim=True)) if mode == "avg" else (
        lambda t: t.amax(axis, keepdim=True))  # fmt: skip
    parts = []
    for lo, hi in adaptive_bins(n, out):
        start, stop = [0] * x.ndim, list(x.shape)
        start[axis], stop[axis] = lo, hi
        parts.append(reducer(x.slice(start, stop)))
    return parts[0].cat(parts[1:], axis) if len(parts) > 1 else parts[0]


def _adaptive_sizes(x, output_size, spatial: int):
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * spatial
    if len(sizes) != spatial:
        raise ScellisError(f"output_size must have {spatial} entries, got {output_size!r}")
    dims = x.shape[x.ndim - spatial :]
    return [int(dims[i]) if s is None else int(s) for i, s in enumerate(sizes)]


def _adaptive(x, output_size, spatial, mode, return_indices=False):
    if return_indices:
        raise no_indices("adaptive max pooling")
    y = x
    for i, size in enumerate(_adaptive_sizes(x, output_size, spatial)):
        y = adaptive_pool(y, x.ndim - spatial + i, size, mode)
    return y


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    return _adaptive(input, output_size, 2, "avg")


def adaptive_max_pool2d(input, output_size, return_indices=False) -> Tensor:
    return _adaptive(input, output_size, 2, "max", return_indices)


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    return _adaptive(input, output_size, 1, "avg")


def adaptive_max_pool1d(input, output_size, return_indices=False) -> Tensor:
    return _adaptive(input, output_size, 1, "max", return_indices)


def pixel_shuffle(input, upscale_factor: int) -> Tensor:
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle: {c} channels are not divisible by {r}^2")
    x = input.reshape(-1, c // (r * r), r, r, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor: int) -> Tensor:
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle: {h}x{w} is not divisible by {r}")
    x = input.reshape(-1, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
    return x.reshape(*lead, c * r * r, h // r, w // r)
