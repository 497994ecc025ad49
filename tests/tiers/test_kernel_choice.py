"""Kernels chosen by tier: debug keeps its fixed orders, prod asks for the reordered
forms (split-K matmul, one-pass sums), fast adds the fused training kernels; and the
reordered forms against the reference device (WebGPU, lavapipe)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import numpy as np
import pytest

import scellis as sc
from scellis.devices.kernel_choice import FIXED, choosing, current, with_order
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels import reduce as reduce_kernels
from scellis.devices.webgpu.kernels.matmul import choose_reordered_split
from scellis.devices.webgpu.kernels.reduce import sum_error_bound
from scellis.ir.record import load_record
from scellis.run.conformance import load_dataset, train_steps
from scellis.runtime.dispatch import apply
from scellis.train.determinism import KERNELS, resolve_tier

pytestmark = pytest.mark.webgpu
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EPS32 = 2.0**-23


def _np(t) -> np.ndarray:
    return np.array(t.tolist(), dtype=np.float64)


def test_each_tier_names_its_kernels():
    assert resolve_tier("debug").kernels == FIXED
    prod, fast = resolve_tier("prod").kernels, resolve_tier("fast").kernels
    assert prod.reordered and not prod.fused_training
    assert fast.reordered and fast.fused_training
    assert current() == FIXED  # outside a step nothing is reordered
    assert with_order("matmul", {}) == {}
    with choosing(KERNELS["prod"]):
        assert with_order("matmul", {}) == {"_order": "split_k"}
        assert with_order("sum", {"axes": (0,)})["_order"] == "one_pass"
        assert with_order("add", {}) == {}
    assert current() == FIXED


def _spied_run(device, record_name: str, tier: str, steps: int = 3):
    """(outcome, the (op, attrs) of every primitive the steps ran)."""
    record = load_record(str(EXAMPLES / f"{record_name}.sml"))
    ds = load_dataset(record, EXAMPLES)
    calls, real = [], device.run

    def spy(op, ins, outs, attrs):
        calls.append((op, dict(attrs)))
        return real(op, ins, outs, attrs)

    device.run = spy
    try:
        return asyncio.run(train_steps(record, device, tier, steps, dataset=ds)), calls
    finally:
        del device.run


def test_debug_runs_no_reordered_or_fused_kernel():
    dev = WebGPUBackend()
    debug, calls = _spied_run(dev, "lstm_forecaster", "debug")
    assert calls and not any("_order" in a or "grads" in a for _, a in calls)
    again, _ = _spied_run(dev, "lstm_forecaster", "debug")
    assert again.losses == debug.losses and again.weights == debug.weights
    _, calls = _spied_run(dev, "lstm_forecaster", "prod")
    orders = {a.get("_order") for op, a in calls if op in ("matmul", "sum")}
    assert {"split_k", "one_pass"} <= orders


def test_split_k_on_a_hardware_adapter_stays_in_the_matmul_bound(gpu):
    dev = WebGPUBackend()
    # the choice is the adapter's: on lavapipe the split does not pay, on a GPU it does
    assert choose_reordered_split(48, 16, 960, dev.limits, software=True) == 1
    parts = choose_reordered_split(48, 16, 960, dev.limits, software=False)
    assert parts > 1
    dev.info = dataclasses.replace(dev.info, adapter_type="DiscreteGPU", name="test", vendor="",
                                   description="")  # fmt: skip
    rng = np.random.default_rng(5)
    a32 = rng.standard_normal((960, 48)).astype(np.float32)
    b32 = rng.standard_normal((960, 16)).astype(np.float32)
    a, b = sc.tensor(a32, device=dev).mT, sc.tensor(b32, device=dev)
    before = dev.stats["dispatches"]
    fixed = _np(apply("matmul", (a, b)))
    split = apply("matmul", (a, b), _order="split_k")
    got = _np(split)
    assert dev.stats["dispatches"] - before == 3  # one, then the parts and their sum
    want = a32.T.astype(np.float64) @ b32
    bound = 960 * EPS32 * (np.abs(a32.T).astype(np.float64) @ np.abs(b32))
    assert (np.abs(got - want) <= bound).all() and (np.abs(fixed - want) <= bound).all()
    assert not np.array_equal(got, fixed)  # another order of the same sums


def test_one_pass_keeps_chunks_for_a_large_column_sum_of_few_outputs(gpu):
    """A bias gradient over many tokens (here 8200 x 136: few outputs, over a million
    terms) would leave a handful of workgroups folding thousands of rows each as one
    chunk: the one-pass order keeps the chunked path's two launches for it."""
    x32 = np.random.default_rng(4).standard_normal((8200, 136)).astype(np.float32)
    assert not reduce_kernels.column_one_pass(136, 8200)
    assert reduce_kernels.column_one_pass(136, 2048)  # small: one launch saved
    assert reduce_kernels.column_one_pass(32 * 128, 8200)  # outputs enough to fill a GPU
    x = sc.tensor(x32, device=gpu)
    before = gpu.stats["dispatches"]
    got = _np(apply("sum", (x,), axes=(0,), keepdim=False, _order="one_pass"))
    assert gpu.stats["dispatches"] - before == 2
    want = x32.astype(np.float64).sum(axis=0)
    bound = sum_error_bound(8200) * np.abs(x32).astype(np.float64).sum(axis=0)
    assert (np.abs(got - want) <= bound).all()


@pytest.mark.parametrize("shape,axes", [((960, 16), (0,)), ((3, 700), (1,)), ((20000,), (0,))])
def test_one_pass_sum_is_one_launch_within_the_sum_bound(gpu, shape, axes):
    x32 = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    x = sc.tensor(x32, device=gpu)
    before = gpu.stats["dispatches"]
    fixed = _np(apply("sum", (x,), axes=axes, keepdim=False))
    mid = gpu.stats["dispatches"]
    got = _np(apply("sum", (x,), axes=axes, keepdim=False, _order="one_pass"))
    assert gpu.stats["dispatches"] - mid == 1 and mid - before >= 1
    r = int(np.prod([shape[a] for a in axes]))
    want = x32.astype(np.float64).sum(axis=axes)
    # one pass: at most ceil(r / 256) + 8 or ceil(r / 8) + 3 roundings per term
    k = max(-(-r // 256) + 8, -(-r // 8) + 3)
    bound = max(k * 2.0**-24, sum_error_bound(r)) * np.abs(x32).astype(np.float64).sum(axis=axes)
    assert (np.abs(got - want) <= bound).all() and (np.abs(fixed - want) <= bound).all()
