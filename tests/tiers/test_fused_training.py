"""The fast tier's fused training kernels on WebGPU (lavapipe) against the reference
device: the multi-tensor optimizer update (every gradient read where it lies, one
dispatch) and the fused dense + bias + activation with its fused backward."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.base.rng import Generator
from scellis.catalog.blocks import common
from scellis.catalog.blocks.common import dense_act
from scellis.catalog.blocks.linear import MLP, MLPConfig
from scellis.catalog.losses import MSELoss
from scellis.catalog.optim import AdamW
from scellis.devices.kernel_choice import choosing
from scellis.devices.webgpu import WebGPUBackend
from scellis.ops.dense import DENSE_ACTIVATIONS
from scellis.ops.optim import state_names
from scellis.runtime import functional as sc_functional
from scellis.runtime.dispatch import apply_inplace
from scellis.train import Batches, run
from scellis.train.determinism import KERNELS

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


TORCH_ACT = {
    "gelu": lambda x: torch.nn.functional.gelu(x),
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "relu": torch.relu,
    "none": lambda t: t,
    "silu": torch.nn.functional.silu,
    "tanh": torch.tanh,
}


@pytest.mark.parametrize("act", DENSE_ACTIVATIONS)
# scalar and vec4 stores; many rows over a partial last block of columns (the backward's
# row lanes and its 16-column workgroups)
@pytest.mark.parametrize("m,k,n", [(6, 5, 7), (40, 12, 16), (130, 8, 37)])
# the one-launch backward (software adapters) and the split one (hardware GPUs)
@pytest.mark.parametrize("fused_backward", [True, False])
def test_fused_dense_layer_matches_torch(gpu, act, m, k, n, fused_backward, monkeypatch):
    monkeypatch.setattr(common, "_fused_backward_pays", lambda device: fused_backward)
    rng = np.random.default_rng(11)
    x, w, b, gy = (
        rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,), (m, n))
    )
    tx, tw, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (x, w, b))
    ty = TORCH_ACT[act](tx @ tw.T + tb)
    ty.backward(torch.tensor(gy, dtype=torch.float64))
    X, W, B = (sc.tensor(v, device=gpu, requires_grad=True) for v in (x, w, b))
    before = gpu.stats["dispatches"]
    with choosing(KERNELS["fast"]):
        y = dense_act(X, W, B, act)
    assert gpu.stats["dispatches"] - before == 1  # matmul, bias and activation in one
    ops, real = [], gpu.run
    gpu.run = lambda op, *rest: ops.append(op) or real(op, *rest)
    try:
        (y * sc.tensor(gy, device=gpu)).sum().backward()
    finally:
        del gpu.run
    # split: the activation's own gradient op and the bias's column sum instead
    # (a layer with no activation has no derivative to fold: its backward is split)
    assert ("dense_act_backward" in ops) == (fused_backward and act != "none"), ops
    for got, want in ((y, ty), (X.grad, tx.grad), (W.grad, tw.grad), (B.grad, tb.grad)):
        want = want.detach().numpy()
        got = np.array(got.tolist(), dtype=np.float64)
        # f32 sums of at most max(k, m) products, and the activation's own rounding
        assert np.abs(got - want).max() <= 8 * max(k, m) * 2.0**-24 * np.abs(want).max() + 1e-6


def test_only_fast_fuses_the_dense_layer(gpu):
    mlp = MLP(MLPConfig(4, 8, activation="gelu"), device=gpu)
    x = sc.tensor(
        np.random.default_rng(4).standard_normal((3, 5, 4)).astype(np.float32), device=gpu
    )
    ops = []
    real = gpu.run

    def spy(op, ins, outs, attrs):
        ops.append(op)
        return real(op, ins, outs, attrs)

    gpu.run = spy
    # fast's own exp and log left out: the fused kernel's arithmetic alone
    polynomial_fast = dataclasses.replace(KERNELS["fast"], native_math=False)
    choices = {**KERNELS, "fast, polynomial exp": polynomial_fast}
    try:
        outs = {}
        for tier, choice in choices.items():
            ops.clear()
            with choosing(choice):
                outs[tier] = np.array(mlp(x).tolist())
            assert ("dense_act" in ops) == tier.startswith("fast"), tier
    finally:
        del gpu.run
    # the fused store computes acc + b, then the activation, as the unfused kernels do
    assert np.array_equal(outs["fast, polynomial exp"], outs["debug"])
    # GELU's exp from the adapter: a few ulp from the polynomial's
    np.testing.assert_allclose(outs["fast"], outs["debug"], rtol=1e-5, atol=1e-7)


def _trained_mlp(dev, tier: str, replay: bool):
    """Losses, weights and the replay record of a small GELU MLP trained under ``tier``."""
    rng = np.random.default_rng(5)
    model = MLP(MLPConfig(3, 8, 1, activation="gelu"), device=dev, gen=Generator(0, "init"))
    x, y = rng.standard_normal((32, 3)), rng.standard_normal((32, 1))
    events = []
    end = run(model, MSELoss(), AdamW(model, lr=0.01, weight_decay=0.01),
              Batches(x.tolist(), y.tolist(), 8, device=dev), epochs=2,
              determinism_tier=tier, log_every=1, on_event=events.append,
              replay=replay)  # fmt: skip
    weights = {k: np.asarray(v.tolist()) for k, v in model.state_dict().items()}
    return [e["loss"] for e in events if e["kind"] == "log"], weights, end["replay"]


@pytest.mark.parametrize("tier", ["prod", "fast"])
def test_replayed_steps_run_the_tier_kernels_bitwise(gpu, tier):
    eager = _trained_mlp(gpu, tier, replay=False)
    replayed = _trained_mlp(gpu, tier, replay=True)
    assert replayed[2]["replayed_steps"] == 5, replayed[2]  # 8 steps: 1 warm-up, 2 recorded
    assert replayed[0] == eager[0]
    for k in eager[1]:
        assert np.array_equal(replayed[1][k], eager[1][k]), k
    debug = _trained_mlp(gpu, "debug", replay=True)
    if tier == "fast":  # the fused dense layer and the multi-tensor update: fewer launches
        assert replayed[2]["dispatches_per_step"] < debug[2]["dispatches_per_step"]
    for k in eager[1]:  # other orders and fusions round otherwise, a little
        assert np.allclose(replayed[1][k], debug[1][k], rtol=1e-4, atol=1e-6), k


def test_the_fused_dense_backward_spreads_rows_over_a_workgroup(gpu):
    """The backward splits each column's rows among 16 lanes (16x the invocations of a
    walk per column, what a GPU needs), and repeated runs agree bitwise."""
    from scellis.devices.webgpu.kernels.dense import BACK_COLUMNS, BACK_LANES

    rng = np.random.default_rng(8)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((300, 6), (20, 6), (20,)))
    grids, real = [], gpu.launch

    def launch(src, grid):
        if "lane_sums" in src.text():  # the backward's kernel
            grids.append(tuple(grid))
        return real(src, grid)

    gpu.launch = launch
    try:
        runs = []
        for _ in range(2):
            X, W, B = (sc.tensor(v, device=gpu, requires_grad=True) for v in (x, w, b))
            with choosing(KERNELS["fast"]):
                dense_act(X, W, B, "gelu").sum().backward()
            runs.append([np.array(t.grad.tolist()) for t in (X, W, B)])
    finally:
        del gpu.launch
    assert len(grids) == 2 and all(g == (-(-20 // BACK_COLUMNS), 1, 1) for g in grids)
    assert BACK_COLUMNS * BACK_LANES == 256
    for a, c in zip(*runs):
        assert np.array_equal(a, c)


def test_the_multi_tensor_update_is_kept_to_software_adapters(gpu, monkeypatch):
    """On a hardware GPU the fast tier's optimizer gathers the gradients and updates the
    flat buffer, as prod's does; on lavapipe it reads them where they lie. Each element
    reads the same gradient value either way, so the trained weights agree bitwise."""
    from scellis.devices import kernel_choice

    def launched(software: bool):
        monkeypatch.setattr(kernel_choice, "software_device", lambda device: software)
        ops, real = [], gpu.run
        gpu.run = lambda op, *rest: ops.append(op) or real(op, *rest)
        try:
            return _trained_mlp(gpu, "fast", replay=False), ops
        finally:
            del gpu.run

    (losses_sw, weights_sw, _), ops_sw = launched(True)
    (losses_hw, weights_hw, _), ops_hw = launched(False)
    assert "flat_gather" in ops_hw and "flat_gather" not in ops_sw
    assert losses_sw == losses_hw
    for k in weights_sw:
        assert np.array_equal(weights_sw[k], weights_hw[k]), k


def _dropped(device, x, gy, dtype, tier):
    """(y, dx, dispatches) of inverted dropout over ``x`` under ``tier``'s kernels, the
    mask drawn from a fixed stream so both tiers draw the same one."""
    X = sc.tensor(x, device=device, dtype=dtype, requires_grad=True)
    stats = getattr(device, "stats", {"dispatches": 0})
    before = stats["dispatches"]
    with choosing(KERNELS[tier]):
        y = sc_functional.dropout(X, 0.3, True, gen=Generator(5, "fused-dropout"))
        (y * sc.tensor(gy, device=device, dtype=dtype)).sum().backward()
    launches = stats["dispatches"] - before
    return np.array(y.tolist()), np.array(X.grad.tolist()), launches


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("where", ["reference", "gpu"])
def test_fused_dropout_gives_the_unfused_bits_in_fewer_launches(gpu, dtype, where):
    device = gpu if where == "gpu" else "reference"
    rng = np.random.default_rng(21)
    # a wide range of magnitudes, so products that round differently would show
    x = rng.standard_normal((37, 9)) * np.exp(rng.uniform(-6, 6, (37, 9)))
    gy = rng.standard_normal((37, 9)) * 100.0
    y, dx, fused = _dropped(device, x, gy, dtype, "fast")
    y0, dx0, unfused = _dropped(device, x, gy, dtype, "prod")
    assert np.array_equal(y, y0) and np.array_equal(dx, dx0)
    kept = y != 0
    assert 0.5 < kept.mean() < 0.9  # about 70% kept
    want = np.where(kept, x / 0.7, 0.0)
    assert np.abs(y - want).max() <= (1e-3 if dtype == "f16" else 1e-6) * np.abs(want).max()
    if where == "gpu":
        assert fused < unfused  # mask, cast and two products: mask and one pass
