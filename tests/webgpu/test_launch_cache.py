"""Eager ops reuse their kept launches: built once per signature, bound to each call's
buffers. Every result is checked against NumPy on fresh random inputs, every call."""

from __future__ import annotations

import math

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels.common import Source
from scellis.runtime.dispatch import apply

pytestmark = pytest.mark.webgpu

SPLIT = {"_tile": "r64", "_split": 4}  # the weight gradient's path: K in parts, then summed


def fresh(gpu, **limits) -> WebGPUBackend:
    """A backend of its own on the same adapter: its kept launches and scratch start empty."""
    return WebGPUBackend(gpu=gpu.gpu, limits=limits or None)


def counting(dev, monkeypatch) -> list:
    """The ops whose kernels ``dev`` builds from now on, one entry per build."""
    built = []
    build = dev._build

    def counted(op, *args):
        built.append(op)
        return build(op, *args)

    monkeypatch.setattr(dev, "_build", counted)
    return built


def check_product(y, a, b):
    """``y`` against ``a @ b`` in f64, within the f32 bound of a K-long sum."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = a.shape[1] * 2.0**-23 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(y.numpy() - want) <= bound)


def test_a_repeated_op_is_built_once_and_binds_its_own_buffers(gpu, rng, monkeypatch):
    dev = fresh(gpu)
    built = counting(dev, monkeypatch)
    for _ in range(3):  # new tensors each time: the kept launch must bind them
        a, b = rng.standard_normal((2, 5, 6)).astype(np.float32)
        got = sc.tensor(a, device=dev) * sc.tensor(b, device=dev)
        np.testing.assert_array_equal(got.numpy(), a * b)
    assert built.count("mul") == 1


@pytest.mark.parametrize("attrs", [{}, SPLIT], ids=["auto", "split"])
def test_weight_gradient_is_built_once_and_right_every_call(gpu, rng, monkeypatch, attrs):
    """The split binds the backend's scratch storage besides its operands: kept too."""
    dev = fresh(gpu)
    built = counting(dev, monkeypatch)
    m, k, n = 16, 512, 12
    for _ in range(4):
        x = rng.standard_normal((k, m)).astype(np.float32)
        dy = rng.standard_normal((k, n)).astype(np.float32)
        tx, tdy = sc.tensor(x, device=dev), sc.tensor(dy, device=dev)
        check_product(apply("matmul", (tx.mT, tdy), **attrs), x.T, dy)
    assert built.count("matmul") == 1
    assert dev.stats["dispatches"] == 4 * (2 if attrs else 1)


def test_the_order_attr_is_part_of_the_signature(gpu, rng, monkeypatch):
    """The determinism tier asks for the reordered K split through ``_order``: the same
    operands with and without it launch differently, each right. (A software adapter
    never reorders: the kernels are built as for a hardware one.)"""
    dev = fresh(gpu)
    monkeypatch.setattr(dev, "_source", lambda: Source(dev.limits, dev.info.has_f16))
    built = counting(dev, monkeypatch)
    x = rng.standard_normal((512, 16)).astype(np.float32)
    dy = rng.standard_normal((512, 12)).astype(np.float32)
    tx, tdy = sc.tensor(x, device=dev), sc.tensor(dy, device=dev)
    counts = []
    for attrs in ({}, {"_order": "split_k"}, {}, {"_order": "split_k"}):
        before = dev.stats["dispatches"]
        check_product(apply("matmul", (tx.mT, tdy), **attrs), x.T, dy)
        counts.append(dev.stats["dispatches"] - before)
    assert counts == [1, 2, 1, 2]
    assert built.count("matmul") == 2


def test_shared_storage_is_part_of_the_signature(gpu, rng):
    """x + y after x + x of the same layout: launches kept binding one storage twice must
    not bind it twice for two (and the same for a product)."""
    dev = fresh(gpu)
    x, y = rng.standard_normal((2, 33)).astype(np.float32)
    tx, ty = sc.tensor(x, device=dev), sc.tensor(y, device=dev)
    for a, b, want in ((tx, tx, x + x), (tx, ty, x + y), (ty, tx, y + x), (ty, ty, y + y)):
        np.testing.assert_array_equal((a + b).numpy(), want)
    a, b = rng.standard_normal((2, 24, 24)).astype(np.float32)
    ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
    check_product(ta @ ta, a, a)
    check_product(ta @ tb, a, b)
    check_product(tb @ ta, b, a)


def test_views_with_other_offsets_and_strides_are_their_own_signatures(gpu, rng):
    dev = fresh(gpu)
    m = rng.standard_normal((6, 8)).astype(np.float32)
    t = sc.tensor(m, device=dev)
    pairs = [(t[1:4], t[2:5]), (t[0:3], t[3:6]), (t.mT[:3, :6], t.mT[5:8, :6])]
    wants = [m[1:4] - m[2:5], m[0:3] - m[3:6], m.T[:3, :6] - m.T[5:8, :6]]
    for (a, b), want in zip(pairs, wants):
        np.testing.assert_array_equal((a - b).numpy(), want)


def test_operands_over_several_binding_windows(gpu, rng, monkeypatch):
    dev = fresh(gpu, max_storage_buffer_binding_size=65536)
    built = counting(dev, monkeypatch)
    for _ in range(2):
        a, b = rng.standard_normal((2, 300, 130)).astype(np.float32)  # 156 KB: 3 windows
        ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
        assert len(ta._buf.handle.windows()) == 3
        np.testing.assert_array_equal((ta + tb).numpy(), a + b)
        got = (ta @ tb.mT[:, :40]).numpy()
        np.testing.assert_allclose(got, a @ b.T[:, :40], rtol=2e-5, atol=2e-5)
    assert built.count("add") == 1
    assert built.count("matmul") == 1


def test_attrs_are_told_apart_to_the_bit(gpu, monkeypatch):
    dev = fresh(gpu)
    built = counting(dev, monkeypatch)
    for value in (0.0, -0.0, 0.0, -0.0):
        got = sc.full((5,), value, device=dev).tolist()
        assert [math.copysign(1.0, v) for v in got] == [math.copysign(1.0, value)] * 5
    assert built.count("full") == 2


def test_limits_lowered_on_a_live_backend_build_again(gpu, rng, monkeypatch):
    dev = fresh(gpu)
    built = counting(dev, monkeypatch)
    a = rng.standard_normal((48, 40)).astype(np.float32)
    b = rng.standard_normal((40, 36)).astype(np.float32)
    ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
    check_product(ta @ tb, a, b)
    check_product(ta @ tb, a, b)
    assert built.count("matmul") == 1
    monkeypatch.setitem(dev.limits, "max_compute_workgroup_storage_size", 4096)
    check_product(ta @ tb, a, b)
    assert built.count("matmul") == 2


def test_a_grown_scratch_is_rebound(gpu, rng, monkeypatch):
    dev = fresh(gpu)
    built = counting(dev, monkeypatch)
    small = [rng.standard_normal((256, 8)).astype(np.float32) for _ in range(2)]
    big = [rng.standard_normal((1024, 64)).astype(np.float32) for _ in range(2)]

    def run(x, dy):
        tx, tdy = sc.tensor(x, device=dev), sc.tensor(dy, device=dev)
        check_product(apply("matmul", (tx.mT, tdy), **SPLIT), x.T, dy)

    run(*small)
    before = dev._scratch_buf.handle
    run(*big)  # needs more scratch than the small product kept: a new, larger storage
    assert dev._scratch_buf.handle is not before
    assert built.count("matmul") == 2
    run(*small)  # its kept launches named the old scratch: built again, on the new one
    assert built.count("matmul") == 3
    run(*small)
    assert built.count("matmul") == 3


def test_encode_binds_kept_launches_to_its_buffers(gpu, rng, monkeypatch):
    """``encode`` (what a recorded step keeps) gives the kept kernels bound to the call's
    own buffers: launching them gives the product of those buffers."""
    dev = fresh(gpu)
    x = rng.standard_normal((512, 16)).astype(np.float32)
    dy = rng.standard_normal((512, 12)).astype(np.float32)
    tx, tdy = sc.tensor(x, device=dev), sc.tensor(dy, device=dev)
    check_product(apply("matmul", (tx.mT, tdy), **SPLIT), x.T, dy)  # kept now
    x2 = rng.standard_normal((512, 16)).astype(np.float32)
    dy2 = rng.standard_normal((512, 12)).astype(np.float32)
    tx2, tdy2 = sc.tensor(x2, device=dev), sc.tensor(dy2, device=dev)
    y = sc.zeros((16, 12), device=dev)
    views = [tx2.mT.device_view, tdy2.device_view], [y.device_view]
    built = counting(dev, monkeypatch)
    for src, grid in dev.encode("matmul", *views, SPLIT):
        dev.launch(src, grid)
    assert built == []
    check_product(y, x2.T, dy2)


def test_builders_outside_the_cache_still_run_each_time(gpu, rng, monkeypatch):
    """A reduction is built every call (its builder reads module settings) and matches."""
    dev = fresh(gpu)
    built = counting(dev, monkeypatch)
    x = rng.standard_normal((4, 9)).astype(np.float32)
    for _ in range(2):
        got = sc.tensor(x, device=dev).sum(1).numpy()
        np.testing.assert_allclose(got, x.sum(1), rtol=1e-6, atol=1e-6)
    assert built.count("sum") == 2
