"""The fast tier's fused softmax cross-entropy (ops/xent.py) on WebGPU (lavapipe) and the
reference device against torch: the mean loss and the logits' gradient, with ignored
rows and label smoothing, over vocabularies narrower and wider than a row's workgroup;
and only the fast tier's loss takes it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.catalog.losses import CrossEntropyLoss, fused_cross_entropy
from scellis.devices.kernel_choice import choosing
from scellis.train.determinism import KERNELS

pytestmark = pytest.mark.webgpu


def _torch(x, t, e):
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    c = x.shape[-1]
    tt = torch.tensor(t.reshape(-1), dtype=torch.long)
    loss = torch.nn.functional.cross_entropy(tx.reshape(-1, c), tt, label_smoothing=e)
    loss.backward()
    return loss.item(), tx.grad.numpy()


@pytest.mark.parametrize("shape", [(4, 7, 5), (2, 3, 300), (65, 88)], ids=str)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("device", ["webgpu", "reference"])
def test_fused_cross_entropy_matches_torch(gpu, shape, smoothing, device):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    t = rng.integers(0, shape[-1], shape[:-1]).astype(np.int32)
    t.reshape(-1)[::5] = -100  # ignored rows: no loss, no gradient, not counted
    want, want_grad = _torch(x, t, smoothing)
    dev = gpu if device == "webgpu" else device
    X = sc.tensor(x, device=dev, requires_grad=True)
    before = getattr(dev, "stats", {"dispatches": 0})["dispatches"]
    loss = fused_cross_entropy(X, sc.tensor(t, device=dev, dtype="i32"), smoothing)
    if device == "webgpu":
        assert dev.stats["dispatches"] - before == 2  # the rows, then the mean
    loss.backward()
    grad = np.array(X.grad.tolist())
    c = shape[-1]
    assert abs(loss.item() - want) <= 8 * c * 2.0**-24 * abs(want)
    assert np.abs(grad - want_grad).max() <= 8 * c * 2.0**-24 * np.abs(want_grad).max()
    assert np.all(grad.reshape(-1, c)[::5] == 0)  # the ignored rows


def test_only_the_fast_tier_fuses_the_loss(gpu):
    rng = np.random.default_rng(1)
    x = sc.tensor(rng.standard_normal((6, 9)).astype(np.float32), device=gpu)
    t = sc.tensor(rng.integers(0, 9, 6).astype(np.int32), device=gpu, dtype="i32")
    ops, real = [], gpu.run

    def spy(op, ins, outs, attrs):
        ops.append(op)
        return real(op, ins, outs, attrs)

    gpu.run = spy
    try:
        values = {}
        for tier in ("debug", "prod", "fast"):
            ops.clear()
            with choosing(KERNELS[tier]):
                values[tier] = CrossEntropyLoss()(x, t).item()
            assert ("softmax_xent" in ops) == (tier == "fast"), tier
            if tier != "fast":
                assert ops.count("softmax_xent") == 0 and len(ops) > 10
    finally:
        del gpu.run
    assert abs(values["fast"] - values["debug"]) <= 1e-6 * abs(values["debug"])
    with choosing(KERNELS["fast"]):  # a sum of the rows keeps the composite
        ops.clear()
        CrossEntropyLoss(reduction="sum")(x, t)
        assert "softmax_xent" not in ops
