"""scellis.nn and optim on WebGPU (tiny sizes): a model moved there after its optimizer
was made trains as its twin does on the reference device; in-place ops and moves."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis import nn, optim

pytestmark = pytest.mark.webgpu


def _model():
    return nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))


def _train(model, opt, device, steps=3):
    x = sc.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 2.0]], device=device)
    y = sc.tensor([[1.0], [-1.0], [0.5]], device=device)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def test_moved_after_the_optimizer_trains_like_the_reference(gpu):
    ref, dev = _model(), _model()
    dev.load_state_dict(ref.state_dict())
    opt_ref = optim.Adam(ref.parameters(), lr=0.05)
    opt_dev = optim.Adam(dev.parameters(), lr=0.05)
    dev.to("webgpu")
    assert {p.device.name for p in dev.parameters()} == {"webgpu"}
    want = _train(ref, opt_ref, "reference")
    got = _train(dev, opt_dev, "webgpu")
    np.testing.assert_allclose(got, want, rtol=1e-4)
    dev.load_state_dict(ref.state_dict())  # in place, on the device
    for p, q in zip(dev.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.numpy(force=True), q.numpy(force=True), rtol=1e-6)


def test_in_place_ops_and_moves_on_webgpu(gpu):
    x = sc.tensor([1.0, 2.0, 3.0]).to("webgpu")
    assert x.device.name == "webgpu"
    x.add_(1.0).mul_(2.0)
    x[0:1].fill_(0.5)
    assert x.tolist() == [0.5, 6.0, 8.0]
    back = x.cpu()
    assert back.device.name == "reference" and back.numpy().tolist() == [0.5, 6.0, 8.0]
