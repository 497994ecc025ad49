"""Helpers for the training-loop tests: a tiny regression task and a readback counter."""

from __future__ import annotations

import contextlib
import math

import scellis as sc
from scellis.catalog.blocks import MLP, MLPConfig
from scellis.catalog.losses import MSELoss
from scellis.catalog.optim import Adam
from scellis.devices import get_device
from scellis.train import Batches, run

XS = [[i / 24.0 - 0.6, ((i * 5) % 11) / 11.0] for i in range(48)]
YS = [[math.sin(3 * a) + b * b] for a, b in XS]


def task(device, seed: int = 0, lr: float = 0.02, hidden: int = 8, batch: int = 8):
    """(model, loss, optimizer, train data, val data), initial weights from ``seed``."""
    sc.manual_seed(seed)
    model = MLP(MLPConfig(2, hidden, 1, activation="tanh"), device=device)
    opt = Adam(model, lr=lr)
    data = Batches(XS, YS, batch, device=device)
    val = Batches(XS[::3], YS[::3], 8, shuffle=False, device=device)
    return model, MSELoss(), opt, data, val


def train(device, *, seed=0, lr=0.02, **kw):
    """Run ``fit`` on the task; returns (events, model, optimizer)."""
    model, loss, opt, data, val = task(device, seed, lr)
    events: list[dict] = []
    kw.setdefault("determinism_tier", "debug")
    kw.setdefault("epochs", 2)
    if kw.pop("with_val", False):
        kw["val_data"] = val
    run(model, loss, opt, kw.pop("data", data), on_event=events.append, **kw)
    return events, model, opt


def kinds(events, kind: str) -> list[dict]:
    return [e for e in events if e["kind"] == kind]


def weights(model) -> dict:
    return {k: v.tolist() for k, v in model.state_dict().items()}


@contextlib.contextmanager
def count_reads(device):
    """Count ``device.read`` calls (every host readback) inside the block."""
    dev = get_device(device)
    inner = dev.read
    calls = []

    async def spy(buf, start=0, count=None):
        calls.append(buf.numel if count is None else count)
        return await inner(buf, start, count)

    dev.read = spy
    try:
        yield calls
    finally:
        del dev.read
