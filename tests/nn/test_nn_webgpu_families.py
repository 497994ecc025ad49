"""One sample per new composition family on WebGPU (lavapipe here), against torch:
convolution and its transpose, pooling, resampling and padding, norms, recurrent
steps over a packed batch, and the composed losses. Tiny shapes: software Vulkan."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nnutil import rng_for

import scellis as sc
import scellis.nn.functional as F
from scellis import nn

pytestmark = [pytest.mark.webgpu, pytest.mark.torch]


def normal(name, *shape):
    return rng_for(name).standard_normal(shape).astype(np.float32)


def on_gpu(a, grad=True):
    return sc.tensor(a, requires_grad=grad).to("webgpu").detach().requires_grad_(grad)


def check(ours_fn, theirs_fn, arrays, name, atol=2e-5):
    """Forward and input gradients of ``ours_fn`` on WebGPU match torch's on the CPU."""
    xs = [on_gpu(a) for a in arrays]
    ts = [torch.from_numpy(a).requires_grad_() for a in arrays]
    y, ty = ours_fn(*xs), theirs_fn(*ts)
    assert y.device.name == "webgpu"
    np.testing.assert_allclose(y.numpy(force=True), ty.detach().numpy(), rtol=1e-4, atol=atol)
    r = normal(name + ":r", *ty.shape)
    y.backward(sc.tensor(r).to("webgpu"))
    ty.backward(torch.from_numpy(r))
    for x, t in zip(xs, ts, strict=True):
        np.testing.assert_allclose(x.grad.numpy(force=True), t.grad.numpy(), rtol=1e-4,
                                   atol=atol)  # fmt: skip


def test_conv_pool_and_transpose_families(gpu):
    x, w = normal("g:x", 2, 3, 6, 6), normal("g:w", 4, 3, 3, 3) * 0.3
    check(lambda a, b: F.max_pool2d(F.conv2d(a, b, padding=1, stride=(1, 2)), 2),
          lambda a, b: TF.max_pool2d(TF.conv2d(a, b, padding=1, stride=(1, 2)), 2),
          [x, w], "conv")  # fmt: skip
    check(lambda a: F.adaptive_avg_pool2d(F.avg_pool2d(a, 3, 1, 1), (4, 3)),
          lambda a: TF.adaptive_avg_pool2d(TF.avg_pool2d(a, 3, 1, 1), (4, 3)),
          [x], "pools")  # fmt: skip
    wt = normal("g:wt", 3, 2, 3, 3) * 0.3
    check(lambda a, b: F.conv_transpose2d(a, b, stride=2, padding=1, output_padding=1),
          lambda a, b: TF.conv_transpose2d(a, b, stride=2, padding=1, output_padding=1),
          [x, wt], "convt")  # fmt: skip


def test_resampling_and_padding(gpu):
    x = normal("g:r", 1, 2, 3, 4)
    check(lambda a: F.pad(F.interpolate(a, scale_factor=2, mode="bilinear"), (1, 2, 2, 1),
                          mode="reflect"),
          lambda a: TF.pad(TF.interpolate(a, scale_factor=2, mode="bilinear"), (1, 2, 2, 1),
                           mode="reflect"), [x], "resample")  # fmt: skip


def test_norms_train_on_webgpu(gpu):
    x = normal("g:bn", 3, 4, 2, 3) * 2 + 1
    ours, theirs = nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
    ours.to("webgpu")
    check(lambda a: F.group_norm(ours(a), 2), lambda a: TF.group_norm(theirs(a), 2), [x], "bn")
    np.testing.assert_allclose(ours.running_var.numpy(force=True),
                               theirs.running_var.numpy(), rtol=1e-5)  # fmt: skip


def test_packed_gru_on_webgpu(gpu):
    from torch.nn.utils.rnn import pack_padded_sequence as tpack
    from torch.nn.utils.rnn import pad_packed_sequence as tunpack

    from scellis.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    ours, theirs = nn.GRU(2, 3, batch_first=True), torch.nn.GRU(2, 3, batch_first=True)
    ours.load_state_dict(theirs.state_dict())
    ours.to("webgpu")

    def run_ours(a):
        out, _ = ours(pack_padded_sequence(a, [2, 4], batch_first=True, enforce_sorted=False))
        return pad_packed_sequence(out, batch_first=True)[0]

    def run_theirs(a):
        out, _ = theirs(tpack(a, [2, 4], batch_first=True, enforce_sorted=False))
        return tunpack(out, batch_first=True)[0]

    check(run_ours, run_theirs, [normal("g:gru", 2, 4, 2)], "gru")


def test_composed_losses_on_webgpu(gpu):
    x, t = normal("g:lx", 4, 3), normal("g:lt", 4, 3)
    check(lambda a, b: F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), reduction="batchmean")
          + F.smooth_l1_loss(a, b, beta=0.5) + F.cosine_similarity(a, b).sum()
          + F.binary_cross_entropy_with_logits(a, b.sigmoid(), pos_weight=b[0].abs().detach()),
          lambda a, b: TF.kl_div(TF.log_softmax(a, 1), TF.softmax(b, 1), reduction="batchmean")
          + TF.smooth_l1_loss(a, b, beta=0.5) + TF.cosine_similarity(a, b).sum()
          + TF.binary_cross_entropy_with_logits(a, b.sigmoid(), pos_weight=b[0].abs().detach()),
          [x, t], "losses")  # fmt: skip


def test_grid_sample_on_webgpu(gpu):
    theta = np.float32([[[0.93, -0.31, 0.17], [0.23, 1.07, -0.13]]])
    x = normal("g:gs", 1, 2, 4, 5)

    def run(lib_f, t, a):
        return lib_f.grid_sample(a, lib_f.affine_grid(t, (1, 2, 3, 6), align_corners=False),
                                 align_corners=False)  # fmt: skip

    check(lambda t, a: run(F, t, a), lambda t, a: run(TF, t, a), [theta, x], "gs")
