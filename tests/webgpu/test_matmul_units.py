"""The matrix-unit matmul (kernels/matmul_units.py). Its fragments and their builtins are
emulated in plain WGSL here (lavapipe has no matrix units), so what runs is the kernel's
own staging through strides, tiling, edge zeros, batches and guarded stores, checked
against a float64 NumPy product within the f32 accumulation bound; then which products
the kernel choice sends to the units."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import pytest

import scellis as sc
from scellis.base.dtypes import f16, f32
from scellis.devices.webgpu.kernels.common import Source
from scellis.devices.webgpu.kernels.matmul import _on_units
from scellis.devices.webgpu.kernels.matmul_units import MatrixUnit, choose_unit
from scellis.runtime.dispatch import apply

pytestmark = [pytest.mark.webgpu]

SHAPES = [
    # (A shape, B shape, A transposed, B transposed). Staged: edges in M, N and K (K not
    # a multiple of the staged block), each operand read along either dim, a batch.
    ((70, 36), (36, 132), False, False),
    ((33, 50), (50, 41), True, False),
    ((2, 3, 40, 36), (2, 3, 36, 70), True, True),
    # direct (whole tiles, aligned): row- and column-major fragments, a batch
    ((64, 96), (96, 64), False, True),
    ((48, 64), (64, 32), True, False),
    ((2, 32, 48), (2, 48, 40), False, False),
]


@contextmanager
def _emulated_unit(gpu, m=4, n=4, k=4, **layout):
    """Small fragments: an emulated fragment lives whole in every invocation, and
    lavapipe's compile time (and, at 16 x 16, its private arrays) grow with it."""
    kept = gpu.matrix
    gpu.matrix = MatrixUnit(m, n, k, subgroup=8, emulated=True, **layout)
    try:
        yield
    finally:
        gpu.matrix = kept


def _operand(rng, shape, transposed: bool, gpu, dtype=np.float16):
    stored = shape[:-2] + shape[-2:][::-1] if transposed else shape
    x = rng.standard_normal(stored).astype(dtype)
    t = sc.tensor(x, device=gpu)
    if transposed:
        x, t = np.swapaxes(x, -1, -2), t.mT
    return x.astype(np.float64), t


def _bound(a64, b64, want, out_eps):
    return a64.shape[-1] * 2.0**-23 * (np.abs(a64) @ np.abs(b64)) + out_eps * np.abs(want)


@pytest.mark.parametrize("sa,sb,ta,tb", SHAPES)
def test_units_kernel_within_the_f32_bound(gpu, rng, sa, sb, ta, tb):
    a64, da = _operand(rng, sa, ta, gpu)
    b64, db = _operand(rng, sb, tb, gpu)
    want = a64 @ b64
    with _emulated_unit(gpu):
        got = apply("matmul", (da, db), _tile="units").numpy()
    assert got.dtype == np.float16 and got.shape == want.shape
    err = np.abs(got.astype(np.float64) - want)
    bound = _bound(a64, b64, want, 2.0**-11)
    assert np.all(err <= bound), f"worst err/bound {np.max(err / bound):.3f}"


def test_units_kernel_on_offset_views_with_another_fragment_shape_and_layout(gpu, rng):
    x = rng.standard_normal((90, 70)).astype(np.float16)
    y = rng.standard_normal((75, 81)).astype(np.float16)
    da, db = sc.tensor(x, device=gpu)[1:, 2:67], sc.tensor(y, device=gpu)[3:68, 1:]
    want = x[1:, 2:67].astype(np.float64) @ y[3:68, 1:].astype(np.float64)
    with _emulated_unit(gpu, m=8, n=4, k=8, fm=1, fn=3, bk=16):
        got = apply("matmul", (da, db), _tile="units").numpy().astype(np.float64)
    bound = _bound(x[1:, 2:67].astype(np.float64), y[3:68, 1:].astype(np.float64), want, 2.0**-11)
    assert np.all(np.abs(got - want) <= bound)


def test_units_kernel_as_the_parts_of_a_k_split(gpu, rng):
    # the parts write f32 scratch (a direct product's fragments stored by the builtin),
    # then a second launch sums them into the f16 result
    a64, da = _operand(rng, (32, 128), False, gpu)
    b64, db = _operand(rng, (128, 16), False, gpu)
    want = a64 @ b64
    with _emulated_unit(gpu):
        got = apply("matmul", (da, db), _tile="units", _split=2).numpy().astype(np.float64)
    assert np.all(np.abs(got - want) <= _bound(a64, b64, want, 2.0**-11))


def _views(dtype, order="split_k"):
    a = SimpleNamespace(dtype=dtype)
    return a, SimpleNamespace(dtype=dtype), {"_order": order} if order else {}


def test_which_products_take_the_units():
    limits = {"max_compute_invocations_per_workgroup": 256, "max_compute_workgroup_size_x": 256,
              "max_compute_workgroup_storage_size": 32768}  # fmt: skip
    unit = MatrixUnit(16, 16, 16, 32)
    src = Source(limits, has_f16=True, matrix=unit)
    a, b, attrs = _views(f16)
    assert _on_units(src, a, b, 512, 384, 1152, attrs)
    assert not _on_units(src, *_views(f32)[:2], 512, 384, 1152, attrs)  # f32 keeps f32 math
    assert not _on_units(src, a, b, 512, 384, 1152, {})  # debug: the order written in the kernel
    assert not _on_units(src, a, b, 512, 16, 1152, attrs)  # too narrow for the tile
    assert not _on_units(src, a, b, 512, 384, 1152, attrs | {"_band": "lower"})
    assert not _on_units(src, a, b, 512, 384, 1152, attrs | {"_tile": "r64"})
    assert not _on_units(Source(limits, has_f16=True), a, b, 512, 384, 1152, attrs)
    software = Source(limits, has_f16=True, matrix=unit, software=True)
    assert not _on_units(software, a, b, 512, 384, 1152, attrs)
    assert _on_units(software, a, b, 512, 384, 1152, {"_tile": "units"})


def test_the_unit_is_an_f16_to_f32_configuration_at_a_fixed_subgroup_size():
    def cfg(t, r, m, n, k, lo=32, hi=32):
        return {"component_type": t, "result_component_type": r, "m": m, "n": n, "k": k,
                "min_subgroup_size": lo, "max_subgroup_size": hi}  # fmt: skip

    listed = [cfg("f16", "f16", 16, 16, 16), cfg("u8", "u32", 16, 16, 32),
              cfg("f16", "f32", 16, 8, 16), cfg("f16", "f32", 16, 16, 16)]  # fmt: skip
    assert choose_unit(listed) == MatrixUnit(16, 16, 16, 32)
    assert choose_unit([cfg("f16", "f32", 8, 8, 8, 16, 32)]) is None  # sizes vary
    assert choose_unit([cfg("f32", "f32", 8, 8, 8)]) is None
    assert choose_unit([]) is None


def test_builtin_kernel_text_enables_the_extension(gpu, rng):
    """A real unit's kernel spells Dawn's builtins and enables them (compiled only where an
    adapter has the units: bench/matmul_units.py on a GPU)."""
    from scellis.devices.webgpu.kernels.matmul import matmul_kernel

    _, da = _operand(rng, (64, 64), False, gpu)
    _, db = _operand(rng, (64, 64), False, gpu)
    src = gpu.source()
    src.matrix = MatrixUnit(16, 16, 16, 32)
    out = sc.tensor(np.zeros((64, 64), np.float16), device=gpu)
    views = (da.device_view, db.device_view)
    matmul_kernel(src, "matmul", views, (out.device_view,), {"_tile": "units"})
    text = src.text()
    assert "enable chromium_experimental_subgroup_matrix;" in text
    for builtin in ("subgroupMatrixLoad<UL>", "subgroupMatrixMultiplyAccumulate(",
                    "subgroupMatrixStore(", "subgroup_matrix_result<f32, 16, 16>"):  # fmt: skip
        assert builtin in text


def test_the_units_are_opt_in(monkeypatch):
    from scellis.devices.webgpu.kernels.variants import MATRIX_FEATURE, matrix_unit

    listed = [{"component_type": "f16", "result_component_type": "f32", "m": 16, "n": 16,
               "k": 16, "min_subgroup_size": 32, "max_subgroup_size": 32}]  # fmt: skip
    features = ["shader-f16", MATRIX_FEATURE]
    monkeypatch.delenv("SCELLIS_MATRIX_UNITS", raising=False)
    assert matrix_unit(features, listed) is None
    monkeypatch.setenv("SCELLIS_MATRIX_UNITS", "1")
    assert matrix_unit(features, listed) == MatrixUnit(16, 16, 16, 32)
    assert matrix_unit(["shader-f16"], listed) is None  # the device was not opened with them
