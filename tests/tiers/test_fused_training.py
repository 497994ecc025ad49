"""The fast tier's fused training kernels on WebGPU (lavapipe) against the reference
device: the multi-tensor optimizer update (every gradient read where it lies, one
dispatch) and the fused dense + bias + activation with its fused backward."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend
from scellis.ops.optim import state_names
from scellis.runtime.dispatch import apply_inplace

pytestmark = pytest.mark.webgpu

SHAPES = [(3, 5), (7,), (4, 2, 3), (1,), (6, 4), (9,), (2, 2), (5, 3), (11,), (3,)]
ADAMW = dict(lr=3e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, amsgrad=False,
             maximize=False, step=3)  # fmt: skip
SGD = dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=1e-3, nesterov=True,
           maximize=False, first=False)  # fmt: skip


def _update(device, op, attrs, grads, flat, state, gate=None, multi=True):
    """The targets after one update of ``op`` on ``device`` (f64 arrays)."""
    return _launched(device, op, attrs, grads, flat, state, gate, multi)[0]


def _launched(device, op, attrs, grads, flat, state, gate=None, multi=True):
    """(the targets after one update, the dispatches it took)."""
    dt = "f32"
    gs = [sc.tensor(g, device=device, dtype=dt) for g in grads]
    targets = [sc.tensor(flat, device=device, dtype=dt)]
    targets += [sc.tensor(s, device=device, dtype=dt) for s in state]
    if multi:
        ins, attrs = tuple(gs), {**attrs, "grads": len(gs)}
    else:
        ins = (sc.tensor(np.concatenate([g.reshape(-1) for g in grads]), device=device, dtype=dt),)
    if gate is not None:
        ins = (*ins, sc.tensor(np.array(gate), device=device, dtype="bool"))
    stats = getattr(device, "stats", {"dispatches": 0})
    before = stats["dispatches"]
    with sc.no_grad():
        apply_inplace(op, ins, tuple(targets), **attrs)
    launches = stats["dispatches"] - before
    return [np.array(t.tolist(), dtype=np.float64) for t in targets], launches


@pytest.mark.parametrize("op,attrs", [("adamw_update", ADAMW), ("sgd_update", SGD)])
@pytest.mark.parametrize("bindings", [None, 8])  # 8: the gradients take several launches
def test_multi_tensor_update_matches_the_gathered_one(gpu, op, attrs, bindings):
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    n = sum(g.size for g in grads)
    flat = rng.standard_normal(n).astype(np.float32)
    state = [np.abs(rng.standard_normal(n)).astype(np.float32) for _ in state_names(op, attrs)]
    dev = gpu if bindings is None else WebGPUBackend(
        limits={"max_storage_buffers_per_shader_stage": bindings})  # fmt: skip
    got, launches = _launched(dev, op, attrs, grads, flat, state)
    # 10 gradients, the targets and meta fit 32 bindings; 8 bindings take several
    assert (
        launches == 1
        if bindings is None
        else launches == -(-len(grads) // (8 - 1 - 1 - len(state)))
    )
    flat_way = _update(dev, op, attrs, grads, flat, state, multi=False)
    want = _update("reference", op, attrs, grads, flat, state)
    for g, f, w in zip(got, flat_way, want):
        assert np.array_equal(g, f)  # the same value per element as after a gather
        assert np.abs(g - w).max() <= 1e-6 * np.abs(w).max()
    assert np.abs(got[0] - flat).max() > 1e-4  # the parameters moved


def test_multi_tensor_update_gated_off_writes_nothing(gpu):
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES[:4]]
    n = sum(g.size for g in grads)
    flat = rng.standard_normal(n).astype(np.float32)
    state = [rng.standard_normal(n).astype(np.float32) ** 2 for _ in range(2)]
    off = _update(gpu, "adamw_update", ADAMW, grads, flat, state, gate=False)
    on = _update(gpu, "adamw_update", ADAMW, grads, flat, state, gate=True)
    assert np.array_equal(off[0], flat.astype(np.float64))
    assert np.array_equal(on[0], _update(gpu, "adamw_update", ADAMW, grads, flat, state)[0])
