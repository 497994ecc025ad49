"""Eager ops replayed from launch plans give what building their kernels gives."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend

pytestmark = pytest.mark.webgpu


def _counting(dev, monkeypatch) -> list:
    """Record the ops whose kernels ``dev`` builds (plans skip the build)."""
    built = []
    encode = dev.encode

    def counted(op, *args):
        built.append(op)
        return encode(op, *args)

    monkeypatch.setattr(dev, "encode", counted)
    return built


def _fresh(gpu, **limits) -> WebGPUBackend:
    return WebGPUBackend(gpu=gpu.gpu, limits=limits or None)


def test_a_repeated_op_is_built_once_and_binds_its_own_buffers(gpu, monkeypatch):
    dev = _fresh(gpu)
    built = _counting(dev, monkeypatch)
    rng = np.random.default_rng(7)
    for _ in range(3):  # new tensors each time: the plan must bind them, not the first ones
        a, b = rng.standard_normal((2, 5, 6)).astype(np.float32)
        got = sc.tensor(a, device=dev) * sc.tensor(b, device=dev)
        np.testing.assert_array_equal(np.array(got.tolist()), a * b)
    assert built.count("mul") == 1


def test_shared_storage_is_part_of_the_key(gpu):
    """x + y after x + x of the same layout: a plan made binding one storage twice must
    not bind it twice for two."""
    dev = _fresh(gpu)
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((2, 33)).astype(np.float32)
    tx, ty = sc.tensor(x, device=dev), sc.tensor(y, device=dev)
    for a, b, want in ((tx, tx, x + x), (tx, ty, x + y), (ty, tx, y + x), (ty, ty, y + y)):
        np.testing.assert_array_equal(np.array((a + b).tolist()), want)


def test_views_with_other_offsets_and_strides_get_their_own_plans(gpu):
    dev = _fresh(gpu)
    rng = np.random.default_rng(9)
    m = rng.standard_normal((6, 8)).astype(np.float32)
    t = sc.tensor(m, device=dev)
    pairs = [(t[1:4], t[2:5]), (t[0:3], t[3:6]), (t.mT[:3, :6], t.mT[5:8, :6])]
    wants = [m[1:4] - m[2:5], m[0:3] - m[3:6], m.T[:3, :6] - m.T[5:8, :6]]
    for (a, b), want in zip(pairs, wants):
        np.testing.assert_array_equal(np.array((a - b).tolist()), want)


def test_operands_over_several_binding_windows(gpu, monkeypatch):
    dev = _fresh(gpu, max_storage_buffer_binding_size=65536)
    built = _counting(dev, monkeypatch)
    rng = np.random.default_rng(10)
    for _ in range(2):
        a, b = rng.standard_normal((2, 300, 130)).astype(np.float32)  # 156 KB: 3 windows
        ta, tb = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
        assert len(ta._buf.handle.windows()) == 3
        np.testing.assert_array_equal(np.array((ta + tb).tolist()), a + b)
        got = np.array((ta @ tb.mT[:, :40]).tolist())
        np.testing.assert_allclose(got, a @ b.T[:, :40], rtol=2e-5, atol=2e-5)
    assert built.count("add") == 1


def test_unplanned_kernels_still_run_each_time(gpu, monkeypatch):
    """A reduction is built every call (its builder reads module settings) and matches."""
    dev = _fresh(gpu)
    built = _counting(dev, monkeypatch)
    x = np.random.default_rng(11).standard_normal((4, 9)).astype(np.float32)
    for _ in range(2):
        got = np.array(sc.tensor(x, device=dev).sum(1).tolist())
        np.testing.assert_allclose(got, x.sum(1), rtol=1e-6, atol=1e-6)
    assert built.count("sum") == 2
