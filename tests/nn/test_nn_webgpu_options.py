"""One WebGPU sample (lavapipe here) of the newer torch surfaces, against torch CPU: a
custom autograd.Function inside a chain, max pooling with indices and its unpool,
bicubic resampling, attention with the extra key/value options. Tiny shapes."""

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


def _square(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return Square


def _close(ours, theirs, atol=2e-5):
    np.testing.assert_allclose(ours.numpy(force=True), theirs.detach().numpy(), rtol=1e-4,
                               atol=atol)  # fmt: skip


def test_function_pool_indices_unpool_and_bicubic_on_webgpu(gpu):
    x = normal("w:x", 1, 2, 6, 5)
    xs = sc.tensor(x).to("webgpu").detach().requires_grad_()
    xt = torch.from_numpy(x).requires_grad_()

    def chain(lib, f, a):
        y, idx = f.max_pool2d(_square(lib).apply(a), 2, return_indices=True)
        up = f.max_unpool2d(y, idx, 2, output_size=a.shape[2:])
        return f.interpolate(up, scale_factor=1.5, mode="bicubic"), idx

    ys, ids = chain(sc, F, xs)
    yt, idt = chain(torch, TF, xt)
    assert ys.device.name == "webgpu"
    _close(ys, yt)
    np.testing.assert_array_equal(ids.numpy(force=True), idt.numpy())
    r = normal("w:r", *yt.shape)
    ys.backward(sc.tensor(r).to("webgpu"))
    yt.backward(torch.from_numpy(r))
    _close(xs.grad, xt.grad)


def test_attention_with_kdim_and_added_keys_on_webgpu(gpu):
    options = {"kdim": 3, "vdim": 5, "add_bias_kv": True, "add_zero_attn": True}
    theirs = torch.nn.MultiheadAttention(4, 2, batch_first=True, **options)
    ours = nn.MultiheadAttention(4, 2, batch_first=True, **options)
    ours.load_state_dict({k: sc.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    ours.to("webgpu")
    q, k, v = normal("w:q", 2, 3, 4), normal("w:k", 2, 4, 3), normal("w:v", 2, 4, 5)
    out, w = ours(*(sc.tensor(a).to("webgpu") for a in (q, k, v)))
    tout, tw = theirs(*(torch.from_numpy(a) for a in (q, k, v)))
    assert out.device.name == "webgpu" and ours.bias_k.device.name == "webgpu"
    _close(out, tout)
    _close(w, tw)
