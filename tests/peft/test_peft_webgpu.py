"""PEFT on WebGPU (lavapipe in CI): adapters agree with the reference device, and the
allocator's live bytes show optimizer state for adapter parameters only."""

from __future__ import annotations

import gc
import os
import tempfile

import numpy as np
import pytest
from peftutil import arr, char_model, ids_for

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

from scellis.catalog import peft  # noqa: E402
from scellis.catalog.losses import CrossEntropyLoss  # noqa: E402
from scellis.catalog.optim import Adam  # noqa: E402
from scellis.devices.webgpu.backend import size_class  # noqa: E402

pytestmark = pytest.mark.webgpu

SECTION = {
    "adapters": [
        {"block_id": "peft/lora", "target_modules": ["q", "v"], "rank": 2},
        {"block_id": "peft/dora", "target_modules": ["fc2"], "rank": 2},
        {"block_id": "peft/prefix", "num_virtual_tokens": 2},
    ]
}


def _steps(device, n=2):
    """Adapted model, n Adam steps; (outputs, adapter values, adapter grads) at the end."""
    m = char_model(device=device, seed=5, d=8, layers=1)
    peft.apply_finetune(m, SECTION, seed=2)
    opt = Adam(m, lr=0.05)
    ids = ids_for("gpu", (2, 4), device=device)
    for _ in range(n):
        opt.zero_grad()
        CrossEntropyLoss()(m(ids), ids).backward()
        grads = {k: arr(p.grad) for k, p in m.named_parameters() if p.requires_grad}
        opt.step()
    values = {k: arr(p) for k, p in m.named_parameters() if p.requires_grad}
    return arr(m(ids)), values, grads


def test_adapters_train_on_webgpu_as_on_the_reference(gpu):
    ref, dev = _steps("reference"), _steps(gpu)
    np.testing.assert_allclose(dev[0], ref[0], rtol=0, atol=2e-4, err_msg="outputs")
    assert ref[1].keys() == dev[1].keys() and any("lora_B" in k for k in ref[1])
    for k in ref[1]:
        np.testing.assert_allclose(dev[2][k], ref[2][k], rtol=0, atol=2e-4, err_msg=f"grad {k}")
        np.testing.assert_allclose(dev[1][k], ref[1][k], rtol=0, atol=2e-4, err_msg=k)


def _state_growth(gpu, section):
    """Live bytes that two optimizer steps leave behind (after zero_grad), and counts."""
    gc.collect()
    m = char_model(device=gpu, seed=1, d=16, layers=1)
    if section:
        peft.apply_finetune(m, section)
    ids = ids_for("mem", (2, 4), device=gpu)
    opt = Adam(m, lr=0.01)
    gc.collect()
    gpu.sync()
    before = gpu.memory()["live_bytes"]
    for _ in range(2):
        opt.zero_grad()
        CrossEntropyLoss()(m(ids), ids).backward()
        opt.step()
    opt.zero_grad()
    gc.collect()
    gpu.sync()
    grp = opt._groups[0]
    trained = sum(p.numel for p in m.parameters() if p.requires_grad)
    total = sum(p.numel for p in m.parameters())
    return gpu.memory()["live_bytes"] - before, trained, total, grp


def test_allocator_holds_state_for_adapter_parameters_only(gpu):
    lora = {"adapters": [{"block_id": "peft/lora", "target_modules": ["q", "v"], "rank": 2}]}
    grown, trained, total, grp = _state_growth(gpu, lora)
    assert trained == 2 * (2 * 16 + 16 * 2) and total > 25 * trained
    assert grp.flat.numel == trained
    assert {k: b.numel for k, b in grp.state.items()} == {"exp_avg": trained, "exp_avg_sq": trained}
    # Adam's two moments and the flat gradient, each one pool size class of the adapter's
    # bytes; a few 256-byte constants (the LoRA scale, Adam's scalars) may be cached too
    state = 3 * size_class(4 * trained)
    assert state <= grown <= state + 16 * 256, grown
    full, f_trained, f_total, _ = _state_growth(gpu, None)
    assert f_trained == f_total
    assert full >= 3 * 4 * f_total  # the same three buffers over every parameter
    assert grown * 20 < full
