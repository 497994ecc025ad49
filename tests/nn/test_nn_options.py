"""torch.nn options beyond the defaults (tracked instance-norm statistics, ...): values,
gradients, buffers and state_dict keys against torch CPU on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nnutil import arr, compare, rng_for

import scellis as sc
import scellis.nn as nn
import scellis.nn.functional as F


@pytest.mark.parametrize("dims", [1, 2])
def test_instance_norm_tracking_running_stats_matches_torch(dims):
    cls, tcls = (nn.InstanceNorm1d, torch.nn.InstanceNorm1d) if dims == 1 else (
        nn.InstanceNorm2d, torch.nn.InstanceNorm2d)  # fmt: skip
    ours = cls(3, affine=True, track_running_stats=True, momentum=0.3)
    theirs = tcls(3, affine=True, track_running_stats=True, momentum=0.3)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = rng_for(f"instance{dims}")
    shape = (2, 3, 5) if dims == 1 else (2, 3, 4, 5)
    for step in range(2):  # training: the instances' statistics, the buffers move
        x = rng.standard_normal(shape) * 2 + 1
        compare(ours, theirs, [x], f"instance{dims}:{step}")
        for key in ("running_mean", "running_var"):
            np.testing.assert_allclose(arr(getattr(ours, key)), getattr(theirs, key).numpy(),
                                       rtol=1e-5, atol=1e-6)  # fmt: skip
    ours.eval(), theirs.eval()  # eval: the running statistics normalise
    compare(ours, theirs, [rng.standard_normal(shape)], f"instance{dims}:eval")


POOLS = [  # (kernel, stride, padding, dilation, ceil_mode), input [2, 3, 7, 8]
    (2, None, 0, 1, False),
    ((3, 2), (2, 1), (1, 0), 1, False),
    (3, 2, 1, (2, 1), True),
]


@pytest.mark.parametrize("k, s, p, d, ceil", POOLS)
def test_max_pool2d_indices_and_unpool_match_torch(k, s, p, d, ceil):
    x = rng_for(f"unpool{k}{s}").standard_normal((2, 3, 7, 8)).astype(np.float32)
    xs, xt = sc.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    ys, ids = nn.MaxPool2d(k, s, p, d, return_indices=True, ceil_mode=ceil)(xs)
    yt, idt = torch.nn.MaxPool2d(k, s, p, d, return_indices=True, ceil_mode=ceil)(xt)
    np.testing.assert_array_equal(arr(ys), yt.detach().numpy())
    np.testing.assert_array_equal(np.asarray(ids.tolist()), idt.numpy())
    if d == 1:  # torch's unpool assumes no dilation
        size = x.shape[2:]
        us = nn.MaxUnpool2d(k, s, p)(ys, ids, output_size=size)
        ut = torch.nn.MaxUnpool2d(k, s, p)(yt, idt, output_size=size)
        np.testing.assert_array_equal(arr(us), ut.detach().numpy())
        w = rng_for("unpool:w").standard_normal(tuple(ut.shape)).astype(np.float32)
        (us * sc.tensor(w)).sum().backward()
        (ut * torch.from_numpy(w)).sum().backward()
        np.testing.assert_allclose(arr(xs.grad), xt.grad.numpy(), atol=1e-6)


def test_max_pool1d_indices_and_unpool1d_match_torch():
    x = rng_for("unpool1d").standard_normal((2, 3, 9)).astype(np.float32)
    ys, ids = nn.MaxPool1d(3, 2, 1, return_indices=True)(sc.tensor(x))
    yt, idt = torch.nn.MaxPool1d(3, 2, 1, return_indices=True)(torch.from_numpy(x))
    np.testing.assert_array_equal(np.asarray(ids.tolist()), idt.numpy())
    us = F.max_unpool1d(ys, ids, 3, 2, 1)
    ut = torch.nn.functional.max_unpool1d(yt, idt, 3, 2, 1)
    np.testing.assert_array_equal(arr(us), ut.numpy())


MHA = [  # constructor options, and whether the call gives weights per head
    ({"kdim": 3, "vdim": 5}, True),
    ({"add_bias_kv": True}, False),
    ({"add_zero_attn": True, "bias": False}, True),
    ({"add_bias_kv": True, "add_zero_attn": True, "kdim": 3, "vdim": 3}, False),
]


@pytest.mark.parametrize("options, per_head", MHA)
def test_multihead_attention_options_match_torch(options, per_head):
    ours = nn.MultiheadAttention(4, 2, batch_first=True, **options)
    theirs = torch.nn.MultiheadAttention(4, 2, batch_first=True, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = rng_for(f"mha{sorted(options)}")
    q = rng.standard_normal((2, 3, 4))
    k = rng.standard_normal((2, 5, options.get("kdim", 4)))
    v = rng.standard_normal((2, 5, options.get("vdim", 4)))
    pad = np.zeros((2, 5), bool)
    pad[1, 3:] = True  # the second sample's last two keys are padding

    def call(m, q, k, v, pad):  # the output and its gradients; the weights below
        return m(q, k, v, key_padding_mask=pad, average_attn_weights=not per_head)[0]

    compare(ours, theirs, [q, k, v, pad], f"mha{sorted(options)}", call=call)
    xs = [sc.tensor(a.astype(np.float32)) for a in (q, k, v)]
    xt = [torch.from_numpy(a.astype(np.float32)) for a in (q, k, v)]
    _, ws = ours(*xs, key_padding_mask=sc.tensor(pad), average_attn_weights=not per_head)
    _, wt = theirs(*xt, key_padding_mask=torch.from_numpy(pad), average_attn_weights=not per_head)
    np.testing.assert_allclose(arr(ws), wt.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert ours(*xs, need_weights=False)[1] is None


@pytest.mark.parametrize("layers, bidirectional", [(1, False), (2, True)])
def test_lstm_with_a_projection_matches_torch(layers, bidirectional):
    ours = nn.LSTM(3, 5, layers, batch_first=True, bidirectional=bidirectional, proj_size=2)
    theirs = torch.nn.LSTM(3, 5, layers, batch_first=True, bidirectional=bidirectional,
                           proj_size=2)  # fmt: skip
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = rng_for(f"lstmproj{layers}")
    D = 2 if bidirectional else 1
    h0, c0 = rng.standard_normal((layers * D, 2, 2)), rng.standard_normal((layers * D, 2, 5))

    def call(m, x, h0, c0):
        out, (h, c) = m(x, (h0, c0))
        return out.sum(-1, keepdim=True) * 0.5 + (h.sum() + c.sum()).reshape(1, 1, 1)

    compare(ours, theirs, [rng.standard_normal((2, 4, 3)), h0, c0], f"lp{layers}", call=call)
    out, (h, c) = ours(sc.tensor(rng.standard_normal((2, 4, 3)).astype(np.float32)))
    assert out.shape == (2, 4, 2 * D) and h.shape == (layers * D, 2, 2)
    assert c.shape == (layers * D, 2, 5)


@pytest.mark.parametrize("size, scale, corners", [((9, 5), None, False), (None, 1.7, True),
                                                  (None, (0.6, 2.0), False)])  # fmt: skip
def test_bicubic_interpolate_matches_torch(size, scale, corners):
    x = rng_for(f"cubic{size}{scale}").standard_normal((2, 3, 5, 6)).astype(np.float32)
    xs, xt = sc.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    ys = F.interpolate(xs, size=size, scale_factor=scale, mode="bicubic", align_corners=corners)
    yt = torch.nn.functional.interpolate(xt, size=size, scale_factor=scale, mode="bicubic",
                                         align_corners=corners)  # fmt: skip
    np.testing.assert_allclose(arr(ys), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    w = rng_for("cubic:w").standard_normal(tuple(yt.shape)).astype(np.float32)
    (ys * sc.tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(arr(xs.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
