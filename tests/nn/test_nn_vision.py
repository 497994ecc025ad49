"""scellis.nn's image layers and functions against torch's (reference device): torch's
weights loaded key for key, outputs and input and parameter gradients compared on
random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nnutil import compare, compare_fn, rng_for

import scellis.nn.functional as F
from scellis import nn


def normal(name, *shape):
    return rng_for(name).standard_normal(shape).astype(np.float32)


CONVS = {
    "plain": ((3, 4, 3), {}),
    "stride_pad": ((3, 4, (3, 2)), {"stride": 2, "padding": (1, 0)}),
    "dilation_groups": ((4, 6, 3), {"dilation": 2, "groups": 2, "padding": 2, "bias": False}),
    "same": ((3, 2, (3, 4)), {"padding": "same"}),
    "reflect": ((3, 2, 3), {"padding": 1, "padding_mode": "reflect"}),
    "circular": ((3, 2, 3), {"padding": 2, "padding_mode": "circular", "dilation": 2}),
}


@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv2d(case):
    args, kw = CONVS[case]
    x = normal(f"conv:{case}", 2, args[0], 7, 8)
    compare(nn.Conv2d(*args, **kw), torch.nn.Conv2d(*args, **kw), [x], f"conv2d{case}")


TRANSPOSED = {
    "plain": ((3, 2, 3), {}),
    "stride_pad_out": ((3, 4, (3, 2)), {"stride": 2, "padding": 1, "output_padding": 1}),
    "groups_dilation": ((4, 6, 2), {"groups": 2, "dilation": 2, "stride": 3, "bias": False}),
}


@pytest.mark.parametrize("case", sorted(TRANSPOSED))
def test_conv_transpose2d(case):
    args, kw = TRANSPOSED[case]
    x = normal(f"convt:{case}", 2, args[0], 4, 5)
    compare(nn.ConvTranspose2d(*args, **kw), torch.nn.ConvTranspose2d(*args, **kw), [x],
            f"convt{case}")  # fmt: skip


def test_conv_transpose1d_and_output_size():
    x = normal("convt1", 2, 3, 6)
    compare(nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1),
            torch.nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), [x], "convt1")  # fmt: skip
    x2 = normal("convt_os", 1, 2, 5, 5)
    call = lambda m, a: m(a, output_size=(11, 12))  # noqa: E731
    compare(nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2),
            [x2], "convt_os", call=call)  # fmt: skip


POOLS = {
    "max": ("max_pool2d", (2,), {}),
    "max_pad_stride": ("max_pool2d", (3,), {"stride": 2, "padding": 1}),
    "max_ceil_dil": ("max_pool2d", ((3, 2),), {"stride": 2, "ceil_mode": True, "dilation": (1, 2)}),
    "avg": ("avg_pool2d", (2,), {}),
    "avg_pad": ("avg_pool2d", (3,), {"stride": 2, "padding": 1}),
    "avg_nopad_ceil": (
        "avg_pool2d",
        (3,),
        {"stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    ),
    "avg_ceil": ("avg_pool2d", (2,), {"stride": 2, "ceil_mode": True}),
    "avg_divisor": ("avg_pool2d", (2,), {"divisor_override": 3}),
    "adaptive_avg": ("adaptive_avg_pool2d", ((3, 4),), {}),
    "adaptive_avg_none": ("adaptive_avg_pool2d", ((None, 2),), {}),
    "adaptive_max": ("adaptive_max_pool2d", (3,), {}),
    "adaptive_avg1d": ("adaptive_avg_pool1d", (3,), {}),
    "adaptive_max1d": ("adaptive_max_pool1d", (4,), {}),
}


@pytest.mark.parametrize("case", sorted(POOLS))
def test_pooling(case):
    fn, args, kw = POOLS[case]
    shape = (2, 3, 7) if fn.endswith("1d") else (2, 3, 7, 9)
    x = normal(f"pool:{case}", *shape)
    compare_fn(lambda a: getattr(F, fn)(a, *args, **kw), lambda a: getattr(TF, fn)(a, *args, **kw),
               [x], case)  # fmt: skip


def test_pool_modules_unbatched_and_adaptive_to_one():
    x = normal("poolmod", 3, 6, 6)
    compare(nn.MaxPool2d(2), torch.nn.MaxPool2d(2), [x], "maxmod")
    compare(nn.AvgPool2d(3, 1, 1), torch.nn.AvgPool2d(3, 1, 1), [x], "avgmod")
    compare(nn.AdaptiveAvgPool2d(1), torch.nn.AdaptiveAvgPool2d(1), [x], "aap1")
    compare(nn.AdaptiveMaxPool2d((2, 3)), torch.nn.AdaptiveMaxPool2d((2, 3)), [x], "amp")
    compare(nn.AdaptiveAvgPool1d(4), torch.nn.AdaptiveAvgPool1d(4), [x[:, :, 0]], "aap1d")
    compare(nn.AdaptiveMaxPool1d(5), torch.nn.AdaptiveMaxPool1d(5), [x[0]], "amp1d")


INTERP = {
    "nearest_x2": ({"scale_factor": 2}, 4),
    "nearest_size": ({"size": (5, 7)}, 4),
    "nearest_exact": ({"size": (5, 3), "mode": "nearest-exact"}, 4),
    "bilinear": ({"scale_factor": 2, "mode": "bilinear"}, 4),
    "bilinear_size_ac": ({"size": (7, 5), "mode": "bilinear", "align_corners": True}, 4),
    "bilinear_frac": ({"scale_factor": 1.5, "mode": "bilinear"}, 4),
    "linear": ({"size": 9, "mode": "linear"}, 3),
    "nearest_1d": ({"scale_factor": 3}, 3),
    "area": ({"size": (3, 2), "mode": "area"}, 4),
}


@pytest.mark.parametrize("case", sorted(INTERP))
def test_interpolate(case):
    kw, ndim = INTERP[case]
    x = normal(f"interp:{case}", *((2, 3, 4, 5) if ndim == 4 else (2, 3, 6)))
    compare_fn(lambda a: F.interpolate(a, **kw), lambda a: TF.interpolate(a, **kw), [x], case)


def test_upsample_modules():
    x = normal("ups", 1, 2, 3, 4)
    compare(nn.Upsample(scale_factor=2, mode="bilinear"),
            torch.nn.Upsample(scale_factor=2, mode="bilinear"), [x], "ups")  # fmt: skip
    compare(nn.UpsamplingBilinear2d(size=(5, 6)), torch.nn.UpsamplingBilinear2d(size=(5, 6)),
            [x], "upsb")  # fmt: skip
    compare(nn.PixelShuffle(2), torch.nn.PixelShuffle(2), [normal("ps", 1, 8, 2, 3)], "ps")


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
def test_pad_modes(mode):
    x = normal(f"pad:{mode}", 2, 3, 4, 5)
    compare_fn(lambda a: F.pad(a, (2, 1, 1, 3), mode=mode),
               lambda a: TF.pad(a, (2, 1, 1, 3), mode=mode), [x], mode)  # fmt: skip


def test_unfold_and_fold():
    x = normal("unfold", 2, 3, 6, 7)
    kw = {"kernel_size": (2, 3), "dilation": (1, 2), "padding": 1, "stride": (2, 1)}
    cols = compare_fn(lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw), [x], "unfold")
    blocks = normal("fold", *cols.shape)
    compare_fn(lambda a: F.fold(a, (6, 7), **kw), lambda a: TF.fold(a, (6, 7), **kw),
               [blocks], "fold")  # fmt: skip


SAMPLING = [("bilinear", "zeros"), ("bilinear", "border"), ("nearest", "zeros")]


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize(("mode", "padding_mode"), SAMPLING)
def test_affine_grid_and_grid_sample(align_corners, mode, padding_mode):
    # away from positions on whole (or, rounding, half) pixels: kinks and ties there
    theta = np.float32(
        [[[0.93, -0.31, 0.17], [0.23, 1.07, -0.13]], [[1.21, 0.11, -0.27], [0.03, 0.83, 0.41]]]
    )
    x = normal("gs:x", 2, 3, 5, 6)

    def ours(t, a):
        grid = F.affine_grid(t, (2, 3, 4, 7), align_corners=align_corners)
        return F.grid_sample(a, grid, mode, padding_mode, align_corners)

    def theirs(t, a):
        grid = TF.affine_grid(t, (2, 3, 4, 7), align_corners=align_corners)
        return TF.grid_sample(a, grid, mode, padding_mode, align_corners)

    compare_fn(ours, theirs, [theta, x], f"gs{mode}{padding_mode}{align_corners}")


POOLS_1D = {
    "max_dil_ceil": ("MaxPool1d", (3,), {"stride": 2, "dilation": 2, "ceil_mode": True}),
    "max_pad": ("MaxPool1d", (3,), {"stride": 2, "padding": 1}),
    "avg_ceil_nopad": ("AvgPool1d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True,
                                            "count_include_pad": False}),
    "avg": ("AvgPool1d", (2,), {}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(POOLS_1D))
def test_pool1d_options(case):
    name, args, kw = POOLS_1D[case]
    x = normal(f"p1:{case}", 2, 3, 10)
    compare(getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw), [x], case)
    fn = "max_pool1d" if name.startswith("Max") else "avg_pool1d"
    compare_fn(lambda a: getattr(F, fn)(a, *args, **kw), lambda a: getattr(TF, fn)(a, *args, **kw),
               [x], "f" + case)  # fmt: skip


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv1d_padding_modes_and_embedding_padding(mode):
    kw = dict(padding=2, padding_mode=mode, dilation=2)
    compare(nn.Conv1d(2, 3, 3, **kw), torch.nn.Conv1d(2, 3, 3, **kw), [normal(mode, 2, 2, 9)],
            f"c1{mode}")  # fmt: skip
    ids = np.array([[0, 2, 1], [2, 2, 3]])
    w = normal("emb:w", 4, 3)
    compare_fn(lambda i, a: F.embedding(i, a, padding_idx=2),
               lambda i, a: TF.embedding(i, a, padding_idx=2), [ids, w], "emb")  # fmt: skip
