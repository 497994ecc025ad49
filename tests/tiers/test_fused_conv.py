"""The fast tier's conv: the taps unfolded in one launch (``time_unfold``, its VJP
``time_fold``) and a fused dense layer over them, against torch, on the reference
device and WebGPU (lavapipe); and the launches it saves a TCN's training step."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import scellis as sc
from scellis.catalog.blocks.conv import Conv1d, Conv1dConfig, activated_conv
from scellis.devices.kernel_choice import choosing
from scellis.ir.record import load_record
from scellis.run.conformance import load_dataset, train_steps
from scellis.train.determinism import KERNELS
from unfold_oracle import torch_time_fold, torch_time_unfold

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# (B, T, C, size, stride, dilation, lo, hi)
WINDOWS = [
    (2, 7, 3, 3, 1, 2, 4, 0),  # a TCN's causal dilated taps
    (2, 9, 1, 3, 2, 2, 1, 3),  # one channel, strided, padding on both sides
    (3, 8, 2, 1, 3, 1, 0, 1),  # one tap per window: skipped steps get no gradient
    (1, 6, 5, 2, 1, 1, 2, 2),
    (2, 5, 4, 4, 1, 1, 0, 0),  # no padding: two windows
]


def _np(t) -> np.ndarray:
    return np.array(t.tolist(), dtype=np.float64)


@pytest.fixture
def device(request):
    if request.param == "webgpu":
        return request.getfixturevalue("gpu")
    return request.param


def _close(got, want, terms: int) -> None:
    # f32 sums of at most ``terms`` values per element (0: a copy, bitwise)
    bound = 4 * terms * 2.0**-24 * np.abs(want).max()
    assert np.abs(got - want).max() <= bound, np.abs(got - want).max()


@pytest.mark.parametrize("device", ["reference", "webgpu"], indirect=True)
@pytest.mark.parametrize("b,t,c,size,stride,dilation,lo,hi", WINDOWS)
def test_time_unfold_and_fold_match_torch(device, b, t, c, size, stride, dilation, lo, hi):
    kw = dict(size=size, stride=stride, dilation=dilation, lo=lo, hi=hi)
    rng = np.random.default_rng(size * 31 + stride * 7 + lo)
    x = rng.standard_normal((b, t, c)).astype(np.float32)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    ty = torch_time_unfold(tx, **kw)
    gy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(gy, dtype=torch.float64))
    X = sc.tensor(x, device=device, requires_grad=True)
    Y = X.prim("time_unfold", **kw)
    (Y * sc.tensor(gy, device=device)).sum().backward()
    assert np.array_equal(_np(Y), ty.detach().numpy())  # a copy, zero in the padding
    _close(_np(X.grad), tx.grad.numpy(), size)  # time_fold: one column per tap
    # the fold on its own, forward and backward (the backward is the unfold)
    G = sc.tensor(gy, device=device, requires_grad=True)
    folded = G.prim("time_fold", steps=t, **kw)
    _close(_np(folded), torch_time_fold(torch.tensor(gy, dtype=torch.float64), t, **kw).numpy(),
           size)  # fmt: skip
    (folded * sc.tensor(x, device=device)).sum().backward()
    assert np.array_equal(_np(G.grad), torch_time_unfold(torch.tensor(x, dtype=torch.float64),
                                                         **kw).numpy())  # fmt: skip


def test_time_fold_reads_a_strided_cotangent(gpu):
    # a transposed view's strides, not a contiguous copy's
    rng = np.random.default_rng(3)
    g = rng.standard_normal((2, 5, 6)).astype(np.float32)  # 5 windows of 2 channels x 3 taps
    kw = dict(size=3, stride=1, dilation=1, lo=2, hi=0)
    view = sc.tensor(np.ascontiguousarray(g.transpose(1, 0, 2)), device=gpu).permute(1, 0, 2)
    assert not view.is_contiguous()
    want = torch_time_fold(torch.tensor(g, dtype=torch.float64), 5, **kw).numpy()
    _close(_np(view.prim("time_fold", steps=5, **kw)), want, 3)


# (C_in, C_out, k, stride, padding, dilation, activation)
CONVS = [
    (3, 5, 3, 1, "causal", 2, "relu"),  # a TCN's conv and its ReLU
    (1, 4, 3, 2, 1, 1, None),  # one input channel, strided
    (4, 6, 1, 1, 0, 1, None),  # a 1x1 conv: the input is its own columns
    (2, 3, 2, 1, 2, 3, "relu"),
]


@pytest.mark.parametrize("device", ["reference", "webgpu"], indirect=True)
@pytest.mark.parametrize("c_in,c_out,k,stride,padding,dilation,act", CONVS)
def test_fast_conv_matches_torch(device, c_in, c_out, k, stride, padding, dilation, act):
    conv = Conv1d(Conv1dConfig(c_in, c_out, k, stride, padding, dilation), device=device)
    lo, hi = conv.pads
    rng = np.random.default_rng(c_in * 10 + k)
    x = rng.standard_normal((3, 11, c_in)).astype(np.float32)
    w, b = _np(conv.weight), _np(conv.bias)
    tx, tw, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, w, b))
    ty = TF.conv1d(TF.pad(tx.transpose(1, 2), (lo, hi)), tw, tb, stride, 0, dilation)
    ty = (ty.relu() if act else ty).transpose(1, 2)
    gy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.tensor(gy, dtype=torch.float64))
    X = sc.tensor(x, device=device, requires_grad=True)
    ops, real = [], getattr(device, "run", None)
    if real is not None:
        device.run = lambda op, *rest: ops.append(op) or real(op, *rest)
    try:
        with choosing(KERNELS["fast"]):
            y = activated_conv(conv, X, act) if act else conv(X)
            (y * sc.tensor(gy, device=device)).sum().backward()
    finally:
        if real is not None:
            del device.run
    if real is not None:
        assert "concat" not in ops and ("time_unfold" in ops) == (k > 1), ops
    terms = c_in * k + 3 * 11  # the matmuls' sums: C_in*k products, or B*T_out rows
    for got, want in ((y, ty), (X.grad, tx.grad), (conv.weight.grad, tw.grad),
                      (conv.bias.grad, tb.grad)):  # fmt: skip
        _close(_np(got), want.detach().numpy(), terms)


def _tcn_step(device, tier: str):
    """(outcome, the ops its steps ran) of the TCN forecaster trained a few steps; a
    concat of [B, T, C] taps is named ``concat over time`` (the optimizer's flat
    parameters and the loop's logged losses are concats too)."""
    record = load_record(str(EXAMPLES / "tcn_forecaster.sml"))
    ds = load_dataset(record, EXAMPLES)
    ops, real = [], device.run

    def spy(op, ins, outs, attrs):
        ops.append("concat over time" if op == "concat" and len(ins[0].shape) == 3 else op)
        return real(op, ins, outs, attrs)

    device.run = spy
    try:
        return asyncio.run(train_steps(record, device, tier, 6, dataset=ds)), ops
    finally:
        del device.run


def test_fast_tcn_step_takes_fewer_launches(gpu):
    prod, prod_ops = _tcn_step(gpu, "prod")
    fast, fast_ops = _tcn_step(gpu, "fast")
    assert "time_unfold" not in prod_ops and "concat over time" in prod_ops
    # every conv's taps in one launch each way: no pad + concat forward, no pads backward
    assert "concat over time" not in fast_ops and {"time_unfold", "time_fold"} <= set(fast_ops)
    assert fast.dispatches < prod.dispatches * 0.7, (fast.dispatches, prod.dispatches)


def test_the_conv_fusion_is_the_fast_tiers_alone():
    assert KERNELS["fast"].fuses("conv")
    assert not any(KERNELS[t].fuses("conv") for t in ("debug", "prod"))
