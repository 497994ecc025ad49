"""Eager ops reuse their encoded kernels: built once per signature, bound to each call's
buffers. Results are checked against NumPy in f64 on fresh random inputs every call."""

import math

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend, encoded
from scellis.devices.webgpu.kernels import KERNELS
from scellis.runtime.dispatch import apply

pytestmark = pytest.mark.webgpu

SPLIT = {"_tile": "r64", "_split": 4}  # the weight gradient's path: K in parts, then summed


@pytest.fixture
def dev(gpu):
    """A backend of its own on the same adapter: its kept kernels and scratch start empty."""
    return WebGPUBackend(gpu=gpu.gpu)


@pytest.fixture
def builds(monkeypatch):
    """How many times each op's kernel builder ran."""
    counts: dict[str, int] = {}
    for op in ("matmul", "full"):
        real = KERNELS[op]

        def counted(src, name, ins, outs, attrs, real=real):
            counts[name] = counts.get(name, 0) + 1
            return real(src, name, ins, outs, attrs)

        monkeypatch.setitem(KERNELS, op, counted)
    return counts


def check_product(y, a, b):
    """``y`` against ``a @ b`` in f64, within the f32 bound of a K-long sum."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = a.shape[1] * 2.0**-23 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(y.numpy() - want) <= bound)


@pytest.mark.parametrize("attrs", [{}, SPLIT], ids=["auto", "split"])
def test_weight_gradient_is_built_once_and_right_every_call(dev, rng, builds, attrs):
    m, k, n = 16, 512, 12
    for _ in range(4):  # new buffers each time: the kept kernels are bound to them
        x = rng.standard_normal((k, m)).astype(np.float32)
        dy = rng.standard_normal((k, n)).astype(np.float32)
        tx, tdy = sc.tensor(x, device=dev), sc.tensor(dy, device=dev)
        check_product(apply("matmul", (tx.mT, tdy), **attrs), x.T, dy)
    assert builds["matmul"] == 1
    assert dev._encoded.hits == 3
    assert dev.stats["dispatches"] == 4 * (2 if attrs else 1)


def test_operands_sharing_a_buffer_are_their_own_signature(dev, rng):
    a = rng.standard_normal((24, 24)).astype(np.float32)
    b = rng.standard_normal((24, 24)).astype(np.float32)
    ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
    check_product(ta @ tb, a, b)
    check_product(ta @ ta, a, a)
    check_product(tb @ ta, b, a)


def test_attrs_are_told_apart_to_the_bit(dev, builds, monkeypatch):
    monkeypatch.setattr(encoded, "KEPT_OPS", encoded.KEPT_OPS | {"full"})
    for value in (0.0, -0.0, 0.0, -0.0):
        got = sc.full((5,), value, device=dev).tolist()
        assert [math.copysign(1.0, v) for v in got] == [math.copysign(1.0, value)] * 5
    assert builds["full"] == 2


def test_lowered_limits_are_their_own_signature(dev, rng, monkeypatch):
    a = rng.standard_normal((48, 40)).astype(np.float32)
    b = rng.standard_normal((40, 36)).astype(np.float32)
    ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
    check_product(ta @ tb, a, b)
    monkeypatch.setitem(dev.limits, "max_compute_workgroup_storage_size", 4096)
    hits = dev._encoded.hits
    check_product(ta @ tb, a, b)
    assert dev._encoded.hits == hits


def test_a_grown_scratch_is_rebound(dev, rng):
    small = [rng.standard_normal(s).astype(np.float32) for s in ((256, 8), (256, 8))]
    big = [rng.standard_normal(s).astype(np.float32) for s in ((1024, 64), (1024, 64))]

    def run(x, dy):
        tx, tdy = sc.tensor(x, device=dev), sc.tensor(dy, device=dev)
        check_product(apply("matmul", (tx.mT, tdy), **SPLIT), x.T, dy)

    run(*small)
    before = dev._scratch_buf.handle
    run(*big)  # needs more scratch than the small product kept: a new, larger storage
    assert dev._scratch_buf.handle is not before
    hits = dev._encoded.hits
    run(*small)  # its kept kernels named the old scratch: built again, on the new one
    assert dev._encoded.hits == hits
    run(*small)
    assert dev._encoded.hits == hits + 1
