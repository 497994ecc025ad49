"""The plan is honest: planned peak >= what the allocator held at its peak, and within +10%.

Measured over two real train-loop steps (the guard, clipping and the optimizer
included) at three sizes of each example: on the webgpu backend (lavapipe; its pool's
size classes) and on the reference device (NumPy's exact sizes), each fresh per run
so its peak counts that run only.
"""

from __future__ import annotations

import dataclasses

import pytest
from planutil import MIXED, SIZES, measured_loop_peak

from scellis.devices.reference.backend import ReferenceBackend
from scellis.devices.webgpu import WebGPUBackend
from scellis.ir.limits import of_backend, resolve
from scellis.ir.plan import make_plan
from scellis.ir.trace import trace
from scellis.train.guard import loop_update
from scellis.train.step import loop_update_for


def _check(name, record, plan, measured, over: float = 0.0):
    """``over``: the share the device may hold above the plan (on WebGPU the pool's
    storages are kept per size class, and the order buffers come and go in a real loop
    differs a little from the traced one, so one may take a class the plan lent another)."""
    assert measured > 0
    assert plan.peak * (1 + over) >= measured, (name, plan.peak, measured)
    assert plan.peak <= 1.10 * measured, (name, plan.peak, measured)


POOL_ORDER = 0.01


# lavapipe is slow: the smallest and largest of each model, and the rematerialised one
# (the reference below takes every size)
ON_WEBGPU = [SIZES[i] for i in (0, 2, 3, 6)]


@pytest.mark.webgpu
@pytest.mark.parametrize("name,make", ON_WEBGPU, ids=[n for n, _ in ON_WEBGPU])
def test_planned_peak_bounds_the_webgpu_allocator(name, make):
    record = make()
    dev = WebGPUBackend()
    plan = make_plan(record, of_backend(dev), update=loop_update, remediate=False)
    _check(name, record, plan, measured_loop_peak(record, dev), POOL_ORDER)


# replay needs a warm-up step and two recorded ones: six steps replay three times
REPLAYED = [SIZES[0], SIZES[3], MIXED[0]]


@pytest.mark.webgpu
@pytest.mark.parametrize("name,make", REPLAYED, ids=[n for n, _ in REPLAYED])
def test_replayed_plan_bounds_the_webgpu_allocator(name, make):
    # a recorded step reuses its own storage by liveness, as the eager step does: the
    # schedule holds about the eager peak (plus the recorded inputs' copies), not the sum
    # of every buffer the step made
    record = make()
    dev = WebGPUBackend()
    update = loop_update_for(record)
    eager = make_plan(record, of_backend(dev), update=update, remediate=False)
    plan = make_plan(record, of_backend(dev), update=update, remediate=False, replay=True)
    assert eager.replay_bytes == 0 and plan.replay_bytes < 1.6 * eager.peak
    assert plan.peak == max(plan.replay_bytes, eager.peak)  # no evaluation planned beside it
    measured = measured_loop_peak(record, dev, steps=6, replay=True)
    print(name, plan.peak, measured, eager.peak)
    assert 0.98 * measured <= plan.peak <= 1.10 * measured, (name, plan.peak, measured)


@pytest.mark.parametrize("name,make", SIZES, ids=[n for n, _ in SIZES])
def test_planned_peak_bounds_the_reference_allocator(name, make):
    record = make()
    dev = ReferenceBackend()
    plan = make_plan(record, resolve("reference"), update=loop_update, remediate=False)
    _check(name, record, plan, measured_loop_peak(record, dev))


@pytest.mark.parametrize("name,make", MIXED, ids=[n for n, _ in MIXED])
def test_mixed_precision_plan_bounds_the_reference_allocator(name, make):
    record = make()
    update = loop_update_for(record)
    assert update is not loop_update  # the loss scale's unscaling is traced too
    plan = make_plan(record, resolve("reference"), update=update, remediate=False)
    assert plan.class_peaks["working_copies_f16"] > 0  # f16 casts of the f32 masters
    _check(name, record, plan, measured_loop_peak(record, ReferenceBackend()))


def test_the_guard_is_planned():
    # the traced optimizer phase is the loop's: each of the two traced steps computes the
    # finite flag (a flat copy of the gradients, times zero, summed), which the plain
    # update does not; the flag gates the update itself, so nothing the size of the
    # parameters or the state is copied to restore a skipped step from
    record = SIZES[0][1]()

    def optimizer_bytes(tr):
        return sum(
            e[2] * e[3].itemsize for e in tr.events if e[0] == "alloc" and e[4] == "optimizer"
        )

    guarded = trace(record, update=loop_update)
    plain = trace(record)
    state = sum(guarded.allocs()[s][0] * 4 for s in guarded.state)
    params = sum(guarded.allocs()[s][0] * 4 for s in guarded.params)
    flag = 2 * (2 * params)  # two steps, each a flat gradient copy and its product
    assert state > params and flag <= optimizer_bytes(guarded) - optimizer_bytes(plain)
    assert optimizer_bytes(guarded) - optimizer_bytes(plain) < flag + params


def test_the_plan_follows_the_records_checkpointing():
    # the record asks for rematerialisation: the traced tape keeps less, the plan says so
    plain, remat = SIZES[-2][1](), SIZES[-1][1]()
    a = make_plan(plain, resolve("reference"), update=loop_update, remediate=False)
    b = make_plan(remat, resolve("reference"), update=loop_update, remediate=False)
    assert b.class_peaks["activations"] < a.class_peaks["activations"]


@pytest.mark.webgpu
@pytest.mark.parametrize("name,make", MIXED, ids=[n for n, _ in MIXED])
def test_mixed_precision_plan_bounds_the_webgpu_allocator(name, make):
    # the LSTM takes the fused step kernels in f16, the Transformer flash attention in f16
    record = make()
    dev = WebGPUBackend()
    if not dev.info.has_f16:
        pytest.skip("this adapter has no shader-f16")
    plan = make_plan(record, of_backend(dev), update=loop_update_for(record), remediate=False)
    _check(name, record, plan, measured_loop_peak(record, dev), POOL_ORDER)


class _WithoutF16:
    """The real adapter with shader-f16 taken out of its feature list."""

    def __init__(self, gpu):
        self._gpu = gpu
        feats = [f for f in gpu.info.features if f != "shader-f16"]
        self.info = dataclasses.replace(gpu.info, features=feats)

    def __getattr__(self, name):
        return getattr(self._gpu, name)


@pytest.mark.webgpu
def test_a_kernel_the_device_refuses_makes_the_plan_red():
    # without shader-f16 the fused LSTM's f16 kernels cannot run: the plan says so before
    # anything runs, naming the kernels and the feature, with what the eager run stops on
    record = MIXED[0][1]()
    dev = WebGPUBackend(gpu=_WithoutF16(WebGPUBackend().gpu))
    plan = make_plan(record, of_backend(dev), update=loop_update_for(record), remediate=False)
    assert plan.verdict == "red" and plan.memory_fits
    assert any("lstm_seq" in p and "'shader-f16'" in p for p in plan.kernel_problems)
