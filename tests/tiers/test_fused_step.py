"""The fast tier's fused optimizer phase on WebGPU (lavapipe) against NumPy and the
reference device: ``grad_stats`` (the joint norm, the clip factor, the finite flag, in
one launch or two levels, over one or several binding packs), the update that reads
its result, and the loop's in-place ``step_tally``."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels.common import Source
from scellis.devices.webgpu.kernels.fused_step import ONE_GROUP, ONE_GROUP_GPU
from scellis.runtime.dispatch import apply_inplace

pytestmark = pytest.mark.webgpu

SMALL = [(3, 5), (7,), (4, 2, 3), (1,), (6, 4), (9,), (2, 2), (5, 3), (11,), (3,)]
LARGE = [(300, 200), (257,), (64, 513)]  # past ONE_GROUP: partials, then a fold


def _stats(dev, grads, max_norm):
    gs = [sc.tensor(g, device=dev) for g in grads]
    out = sc.zeros(3, dtype="f32", device=dev)
    before = getattr(dev, "stats", {"dispatches": 0})["dispatches"]
    with sc.no_grad():
        apply_inplace("grad_stats", tuple(gs), (out,), max_norm=max_norm)
    launches = getattr(dev, "stats", {"dispatches": 0})["dispatches"] - before
    return np.array(out.tolist(), dtype=np.float64), launches


def _want(grads, max_norm):
    flat = np.concatenate([g.reshape(-1).astype(np.float64) for g in grads])
    norm = np.sqrt((flat * flat).sum())
    factor = min(max_norm / (norm + 1e-6), 1.0) if max_norm else 1.0
    return norm, factor, float(np.isfinite(flat).all())


@pytest.mark.parametrize("shapes", [SMALL, LARGE], ids=["one group", "two levels"])
@pytest.mark.parametrize("bindings", [None, 6])  # 6: three gradients a launch
@pytest.mark.parametrize("max_norm", [0.0, 1.5])
def test_grad_stats_matches_numpy(gpu, shapes, bindings, max_norm):
    rng = np.random.default_rng(17)
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    dev = gpu if bindings is None else WebGPUBackend(
        limits={"max_storage_buffers_per_shader_stage": bindings})  # fmt: skip
    got, launches = _stats(dev, grads, max_norm)
    norm, factor, finite = _want(grads, max_norm)
    n = sum(g.size for g in grads)
    assert abs(got[0] - norm) <= 8 * np.sqrt(n) * 2.0**-24 * norm
    assert abs(got[1] - factor) <= 1e-6 * factor and got[2] == finite == 1.0
    assert max_norm == 0.0 or got[1] < 1.0  # the factor clips: the norm is well above 1.5
    packs = 1 if bindings is None else -(-len(grads) // 3)
    assert launches == (1 if packs == 1 and n <= ONE_GROUP else packs + 1)
    ref, _ = _stats("reference", grads, max_norm)
    assert np.allclose(got, ref, rtol=1e-6)
    assert np.array_equal(got, _stats(dev, grads, max_norm)[0])  # a fixed order


def test_grad_stats_spreads_a_middling_total_on_a_gpu(gpu):
    """A total one CPU thread sums best alone (lavapipe: one launch) is spread over
    several workgroups and folded on a hardware adapter, with the same statistics."""
    rng = np.random.default_rng(5)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(40, 97), (1311,), (33, 29)]]
    n = sum(g.size for g in grads)
    assert ONE_GROUP_GPU < n <= ONE_GROUP
    hw = WebGPUBackend(gpu=gpu.gpu)  # built as for a hardware adapter
    hw._source = lambda: Source(hw.limits, hw.info.has_f16, software=False)
    norm, factor, finite = _want(grads, 2.0)
    for dev, launches in ((gpu, 1), (hw, 2)):
        got, used = _stats(dev, grads, 2.0)
        assert used == launches
        assert abs(got[0] - norm) <= 8 * np.sqrt(n) * 2.0**-24 * norm
        assert abs(got[1] - factor) <= 1e-6 * factor and got[2] == finite == 1.0
        assert np.array_equal(got, _stats(dev, grads, 2.0)[0])  # a fixed order


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("shapes", [SMALL, LARGE], ids=["one group", "two levels"])
def test_grad_stats_flags_a_non_finite_element(gpu, bad, shapes):
    rng = np.random.default_rng(2)
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads[-1].reshape(-1)[-1] = bad  # the last element of the last launch
    assert _stats(gpu, grads, 1.0)[0][2] == 0.0
    assert _stats("reference", grads, 1.0)[0][2] == 0.0


ADAMW = dict(lr=3e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, amsgrad=False,
             maximize=False, step=3)  # fmt: skip


def _update(dev, gradients, flat, state, extra, **attrs):
    gs = tuple(sc.tensor(g, device=dev) for g in gradients)
    targets = tuple(sc.tensor(t, device=dev) for t in (flat, *state))
    with sc.no_grad():
        apply_inplace("adamw_update", (*gs, *extra), targets, **ADAMW, **attrs)
    return [np.array(t.tolist(), dtype=np.float64) for t in targets]


@pytest.mark.parametrize("finite", [1.0, 0.0])
def test_update_reading_stats_is_the_clipped_gated_update(gpu, finite):
    rng = np.random.default_rng(9)
    grads = [rng.standard_normal(s).astype(np.float32) for s in SMALL]
    n = sum(g.size for g in grads)
    flat = rng.standard_normal(n).astype(np.float32)
    state = [np.abs(rng.standard_normal(n)).astype(np.float32) for _ in range(2)]
    factor = np.float32(0.37)
    stats = sc.tensor(np.array([2.7, factor, finite], np.float32), device=gpu)
    got = _update(gpu, grads, flat, state, (stats,), grads=len(grads), stats=True)
    if not finite:  # the flag off: every target as it was
        for g, w in zip(got, (flat, *state)):
            assert np.array_equal(g, w.astype(np.float64))
        return
    # the same bits as clipping first (each gradient times the factor, in f32), then
    # the multi-tensor update
    clipped = [g * factor for g in grads]
    want = _update(gpu, clipped, flat, state, (), grads=len(grads))
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    ref = _update("reference", grads, flat, state,
                  (sc.tensor(np.array([2.7, factor, 1.0], np.float32), device="reference"),),
                  grads=len(grads), stats=True)  # fmt: skip
    for g, w in zip(got, ref):
        assert np.abs(g - w).max() <= 1e-6 * np.abs(w).max()


@pytest.mark.parametrize("finite", [1.0, 0.0])
def test_step_tally_adds_the_step_in_place(gpu, finite):
    rng = np.random.default_rng(int(finite))
    loss, total, good, skipped = (float(v) for v in rng.uniform(0.5, 5.0, 4))
    for dev in (gpu, "reference"):
        acc = tuple(sc.tensor(np.float32(v), device=dev) for v in (total, good, skipped))
        st = sc.tensor(np.array([1.0, 1.0, finite], np.float32), device=dev)
        with sc.no_grad():
            apply_inplace("step_tally", (sc.tensor(np.float32(loss), device=dev), st), acc)
        got = [a.item() for a in acc]
        f32 = np.float32
        want = [f32(total) + (f32(loss) if finite else f32(0)), f32(good) + f32(finite),
                f32(skipped) + (f32(1) - f32(finite))]  # fmt: skip
        assert got == [float(w) for w in want], dev


def test_grad_stats_without_scratch_chains_one_group_launches(gpu):
    """Where a build has no scratch storage, each binding pack is one workgroup's launch
    that carries the sum and flag on to the next through the result."""
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(s).astype(np.float32) for s in LARGE + SMALL[:4]]
    dev = WebGPUBackend(limits={"max_storage_buffers_per_shader_stage": 6})
    dev._scratch = None  # the builder then sees no scratch
    got, launches = _stats(dev, grads, 1.5)
    assert launches == -(-len(grads) // 3)
    norm, factor, _ = _want(grads, 1.5)
    n = sum(g.size for g in grads)
    assert abs(got[0] - norm) <= 8 * np.sqrt(n) * 2.0**-24 * norm
    assert abs(got[1] - factor) <= 1e-6 * factor and got[2] == 1.0
    grads[0].reshape(-1)[7] = np.nan  # in the first launch: carried to the last
    assert _stats(dev, grads, 1.5)[0][2] == 0.0
