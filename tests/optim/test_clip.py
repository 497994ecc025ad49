"""Gradient clipping against torch.nn.utils: global norm (2, inf, p) and value."""

import numpy as np
import pytest
import torch

import scellis as sc
from conftest import DEVICES
from scellis.catalog.clip import clip_grad_norm_, clip_grad_value_
from scellis.devices import get_device

SHAPES = [(3, 4), (5,)]


def _setup(device, scale):
    rng = np.random.default_rng(4)
    grads = [np.float32(rng.standard_normal(s) * scale) for s in SHAPES]
    ours = [sc.zeros(s, device=device, requires_grad=True) for s in SHAPES]
    theirs = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    for p, t, g in zip(ours, theirs, grads):
        p.grad, t.grad = sc.tensor(g, device=device), torch.tensor(g)
    return ours, theirs


def _check(ours, theirs):
    for p, t in zip(ours, theirs):
        torch.testing.assert_close(torch.tensor(np.float32(p.grad.tolist())), t.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "norm_type,max_norm,scale",
    [(2.0, 1.0, 1.0), (2.0, 100.0, 1.0), (float("inf"), 0.5, 1.0), (3.0, 0.7, 2.0)],
)
def test_clip_grad_norm_matches_torch(device, norm_type, max_norm, scale):
    ours, theirs = _setup(device, scale)
    total = clip_grad_norm_(ours, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total.shape == () and total.device is get_device(device)  # stays on the device
    torch.testing.assert_close(torch.tensor(np.float32(total.item())), want)
    _check(ours, theirs)


@pytest.mark.parametrize("device", DEVICES)
def test_clip_grad_value_matches_torch(device):
    ours, theirs = _setup(device, 1.0)
    clip_grad_value_(ours, 0.3)
    torch.nn.utils.clip_grad_value_(theirs, 0.3)
    _check(ours, theirs)


def test_no_readback_while_clipping():
    ours, _ = _setup("reference", 1.0)
    dev = get_device("reference")
    reads = []
    inner = dev.read
    dev.read = lambda buf, *span: reads.append(buf) or inner(buf, *span)
    try:
        clip_grad_norm_(ours, 1.0)
    finally:
        del dev.read
    assert reads == []
