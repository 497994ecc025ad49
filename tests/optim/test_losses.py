"""Catalog losses against torch.nn.functional: forward value and input gradient (f32)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import scellis as sc
from conftest import DEVICES
from scellis.catalog import lookup
from scellis.catalog.losses import LOSSES

rng = np.random.default_rng(11)
PRED = rng.standard_normal((6, 5)).astype(np.float32)
TARGET = (PRED + rng.standard_normal((6, 5)) * 1.5).astype(np.float32)
PROBS = rng.uniform(0, 1, (6, 5)).astype(np.float32)
CLASSES = np.array([0, 4, 2, -100, 1, 3], dtype=np.int32)

ROWS = [
    ("mse", {}, lambda p, t: TF.mse_loss(p, t), TARGET),
    ("mse", {"reduction": "sum"}, lambda p, t: TF.mse_loss(p, t, reduction="sum"), TARGET),
    ("mae", {}, lambda p, t: TF.l1_loss(p, t), TARGET),
    ("mae", {"reduction": "none"}, lambda p, t: TF.l1_loss(p, t, reduction="none"), TARGET),
    ("huber", {}, lambda p, t: TF.huber_loss(p, t), TARGET),
    (
        "huber",
        {"delta": 0.4, "reduction": "sum"},
        lambda p, t: TF.huber_loss(p, t, delta=0.4, reduction="sum"),
        TARGET,
    ),
    ("cross_entropy", {}, lambda p, t: TF.cross_entropy(p, t), CLASSES),
    (
        "cross_entropy",
        {"label_smoothing": 0.2},
        lambda p, t: TF.cross_entropy(p, t, label_smoothing=0.2),
        CLASSES,
    ),
    (
        "cross_entropy",
        {"ignore_index": 2, "reduction": "sum"},
        lambda p, t: TF.cross_entropy(p, t, ignore_index=2, reduction="sum"),
        np.where(CLASSES < 0, 0, CLASSES).astype(np.int32),
    ),
    ("bce_with_logits", {}, lambda p, t: TF.binary_cross_entropy_with_logits(p, t), PROBS),
    (
        "bce_with_logits",
        {"reduction": "none"},
        lambda p, t: TF.binary_cross_entropy_with_logits(p, t, reduction="none"),
        PROBS,
    ),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "name,cfg,twin,target", ROWS, ids=[f"{r[0]}-{i}" for i, r in enumerate(ROWS)]
)
def test_loss_matches_torch(name, cfg, twin, target, device):
    loss = LOSSES[name](**cfg)
    x = sc.tensor(PRED, device=device, requires_grad=True)
    t = sc.tensor(target, device=device)
    xt = torch.tensor(PRED, requires_grad=True)
    tt = torch.tensor(target.astype(np.int64) if target.dtype.kind == "i" else target)
    out, want = loss(x, t), twin(xt, tt)
    got = torch.tensor(np.asarray(out.tolist(), dtype=np.float32))
    torch.testing.assert_close(got, want.detach())
    cot = np.float32(rng.standard_normal(tuple(want.shape)))
    out.backward(sc.tensor(cot, device=device) if cot.ndim else None)
    want.backward(torch.tensor(cot) if cot.ndim else None)
    torch.testing.assert_close(torch.tensor(np.float32(x.grad.tolist())), xt.grad)


def test_registered_and_checked():
    for name, impl in LOSSES.items():
        e = lookup(f"training/loss/{name}", "loss")
        assert e.impl is impl and e.config is impl.config and e.doc
    with pytest.raises(sc.ScellisError, match="reduction"):
        LOSSES["mse"](reduction="avg")
    with pytest.raises(sc.ScellisError, match="delta"):
        LOSSES["huber"](delta=0.0)
