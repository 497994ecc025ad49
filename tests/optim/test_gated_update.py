"""The fused updates' gate: a 0-d bool the update ops take after the gradient.

A True gate gives the very bits of the ungated update; a False one leaves the
parameters and every state buffer bitwise as they were. Checked for each optimizer
(with its state-adding flags) on the reference device and on WebGPU, against the
ungated run on the same device, and on WebGPU under small binding limits, where the
update runs window by window and every launch takes the gate.
"""

import numpy as np
import pytest

import scellis as sc
from conftest import DEVICES
from scellis.catalog import optim
from scellis.catalog.optim import flat_view
from scellis.devices.webgpu import WebGPUBackend

OPTIMIZERS = [
    (optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    (optim.Adam, {"lr": 1e-2, "amsgrad": True}),
    (optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
    (optim.RMSprop, {"lr": 1e-2, "momentum": 0.5, "centered": True}),
    (optim.Lion, {"lr": 1e-3}),
    (optim.Adagrad, {"lr": 1e-2}),
    (optim.NAdam, {"lr": 1e-2}),
    (optim.RAdam, {"lr": 1e-2}),
]
SHAPES = [(37,), (5, 11)]


def _run(dev, cls, kw, gates, ws, grads):
    """Steps with ``gates`` (None: ungated); the flat parameters and state after each."""
    ps = [sc.tensor(w, device=dev, requires_grad=True) for w in ws]
    opt = cls(ps, **kw)
    out = []
    for gate, step in zip(gates, grads):
        for p, g in zip(ps, step):
            p.grad = sc.tensor(g, device=dev)
        if gate is None:
            opt.step()
        else:
            opt.step_if(sc.tensor(gate, device=dev, dtype="bool"))
        state = [v.tolist() for k, v in sorted(opt.state_of(ps[0]).items()) if k != "step"]
        out.append((np.asarray(flat_view(ps).tolist()), state))
    return out


def _inputs(seed):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(4)]
    return ws, grads


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[c.__name__ for c, _ in OPTIMIZERS])
def test_a_true_gate_is_the_update_and_a_false_one_writes_nothing(device, cls, kw):
    ws, grads = _inputs(7)
    plain = _run(device, cls, kw, [None] * 4, ws, grads)
    gated = _run(device, cls, kw, [True, False, True, False], ws, grads)
    # step 1 as the plain one; step 2 skipped (unchanged); step 3 differs from plain's
    # (the host's step count advanced, the moments did not), step 4 skipped again
    np.testing.assert_array_equal(gated[0][0], plain[0][0])
    assert gated[0][1] == plain[0][1]
    for k in (1, 3):
        np.testing.assert_array_equal(gated[k][0], gated[k - 1][0])
        assert gated[k][1] == gated[k - 1][1]
    assert not np.array_equal(gated[2][0], gated[1][0])  # the third step moved


@pytest.mark.webgpu
def test_the_gate_holds_in_every_window_of_a_split_update(gpu):
    limits = {"max_storage_buffer_binding_size": 65536, "max_storage_buffers_per_shader_stage": 8}
    low = WebGPUBackend(gpu=gpu.gpu, limits=limits)
    shapes = [(1000,), (120, 130), (130, 120)]  # two 64 KiB windows per flat buffer
    rng = np.random.default_rng(5)
    ws = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
    kw = {"lr": 1e-2, "weight_decay": 0.1}
    want = _run(gpu, optim.AdamW, kw, [True, False, True], ws, grads)
    before = low.stats["dispatches"]
    got = _run(low, optim.AdamW, kw, [True, False, True], ws, grads)
    assert low.stats["dispatches"] - before >= 3 * (1 + 2)  # gather + 2 or more launches
    for (gp, gs), (wp, wst) in zip(got, want):
        np.testing.assert_array_equal(gp, wp)
        assert gs == wst
    np.testing.assert_array_equal(got[1][0], got[0][0])
