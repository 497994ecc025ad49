"""WebGPU matmul against the reference device (f64): shapes, layouts, grads, limits.

Tolerance (stated in src/scellis/devices/webgpu/kernels/matmul.py): elementwise
``|C - A@B| <= K * eps_f32 * (|A| @ |B|)``, eps_f32 = 2^-23, for f32 inputs that the
reference holds exactly in f64. A gradient summed over a broadcast batch dim of size
``s`` adds ``s`` to K in the bound (one more rounding per summed term).
"""

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels.matmul import (
    REG_MIN_WORK,
    REGS,
    TILES,
    choose_reg,
    choose_side,
    choose_split,
    fold_grid,
)
from scellis.runtime.dispatch import apply

pytestmark = pytest.mark.webgpu

EPS32 = 2.0**-23


def _pair(arr, dev, requires_grad=False):
    a32 = np.asarray(arr, dtype=np.float32)
    ref = sc.tensor(a32.astype(np.float64), device="reference", requires_grad=requires_grad)
    return ref, sc.tensor(a32, device=dev, requires_grad=requires_grad)


def _np(t) -> np.ndarray:
    return np.array(t.tolist(), dtype=np.float64)


def _bound(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    return max(k, 1) * EPS32 * (np.abs(a) @ np.abs(b))


def _check(got, want, bound, what=""):
    assert got.shape == want.shape, (got.shape, want.shape)
    err = np.abs(got - want)
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else ()
    assert np.all(err <= bound), f"{what}: err {err[worst]:.3g} > bound {bound[worst]:.3g}"


def _operand(rng, shape, transposed: bool, dev):
    """(reference, device, f64 values) of a [..., R, C] operand, stored [..., C, R] and
    viewed through .mT when ``transposed``."""
    stored = shape[:-2] + shape[-2:][::-1] if transposed and len(shape) >= 2 else shape
    data = rng.standard_normal(stored).astype(np.float32)
    ref, got = _pair(data, dev)
    if transposed and len(shape) >= 2:
        ref, got, data = ref.mT, got.mT, np.swapaxes(data, -1, -2)
    return ref, got, data.astype(np.float64)


def _agree(gpu, rng, sa, sb, ta=False, tb=False):
    ra, da, a = _operand(rng, sa, ta, gpu)
    rb, db, b = _operand(rng, sb, tb, gpu)
    want, got = _np(ra @ rb), _np(da @ db)
    _check(got, want, _bound(a, b, sa[-1]), f"{sa} @ {sb} ta={ta} tb={tb}")


SHAPES = [
    (1, 1, 1),
    (7, 129, 3),
    (129, 7, 65),
    (1000, 17, 5),
    (64, 64, 64),
    (65, 33, 67),
    (5, 0, 3),
    (4, 200, 8),
]


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_2d_agrees_with_reference(gpu, rng, m, k, n):
    _agree(gpu, rng, (m, k), (k, n))


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("m,k,n", [(7, 129, 3), (129, 7, 65), (36, 20, 44)])
def test_transposed_views_agree(gpu, rng, m, k, n, ta, tb):
    _agree(gpu, rng, (m, k), (k, n), ta, tb)


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((2, 3, 9, 5), (2, 3, 5, 7)),
        ((3, 1, 6, 8), (4, 8, 12)),
        ((1, 5, 4), (3, 1, 4, 6)),
        ((2, 3, 9, 5), (5, 7)),
    ],
)
def test_batched_and_broadcast_agree(gpu, rng, sa, sb):
    _agree(gpu, rng, sa, sb)


def test_batched_transposed_agree(gpu, rng):
    _agree(gpu, rng, (2, 3, 9, 12), (2, 3, 12, 16), ta=True, tb=True)


def test_permuted_batch_strides(gpu, rng):
    # batch dims out of memory order: the kernel walks them through their strides
    data = rng.standard_normal((4, 3, 6, 8)).astype(np.float32)
    ra, da = _pair(data, gpu)
    rb, db, b = _operand(rng, (3, 4, 8, 5), False, gpu)
    ra, da = ra.permute((1, 0, 2, 3)), da.permute((1, 0, 2, 3))
    a = np.transpose(data, (1, 0, 2, 3)).astype(np.float64)
    _check(_np(da @ db), _np(ra @ rb), _bound(a, b, 8))


def test_offset_views_agree(gpu, rng):
    # slices start mid-buffer (offsets not 4-aligned): the scalar loaders take them
    x = rng.standard_normal((20, 30)).astype(np.float32)
    y = rng.standard_normal((31, 17)).astype(np.float32)
    (rx, dx), (ry, dy) = _pair(x, gpu), _pair(y, gpu)
    ra, da, a = rx[1:, 2:22], dx[1:, 2:22], x[1:, 2:22].astype(np.float64)
    rb, db, b = ry[3:23, 1:], dy[3:23, 1:], y[3:23, 1:].astype(np.float64)
    _check(_np(da @ db), _np(ra @ rb), _bound(a, b, 20))


@pytest.mark.parametrize("sa,sb", [((5,), (5, 3)), ((4, 6), (6,)), ((9,), (9,)), ((2, 3, 7), (7,))])
def test_1d_agrees(gpu, rng, sa, sb):
    ra, da, a = _operand(rng, sa, False, gpu)
    rb, db, b = _operand(rng, sb, False, gpu)
    _check(_np(da @ db), _np(ra @ rb), _bound(a, b, sa[-1]))


def _sum_to(x: np.ndarray, shape) -> np.ndarray:
    while x.ndim > len(shape):
        x = x.sum(0)
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return x.sum(axes, keepdims=True) if axes else x


@pytest.mark.parametrize(
    "sa,sb", [((7, 5), (5, 9)), ((2, 6, 4), (2, 4, 5)), ((3, 1, 6, 5), (4, 5, 7))]
)
def test_gradients_agree(gpu, rng, sa, sb):
    a32 = rng.standard_normal(sa).astype(np.float32)
    b32 = rng.standard_normal(sb).astype(np.float32)
    ra, da = _pair(a32, gpu, requires_grad=True)
    rb, db = _pair(b32, gpu, requires_grad=True)
    out_shape = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    r32 = rng.standard_normal(out_shape).astype(np.float32)
    rr, dr = _pair(r32, gpu)
    (ra @ rb * rr).sum().backward()
    (da @ db * dr).sum().backward()
    a, b, r = (np.abs(x.astype(np.float64)) for x in (a32, b32, r32))
    # ga = r @ b^T (inner dim N), gb = a^T @ r (inner dim M), summed over broadcast dims
    ga_abs = _sum_to(r @ np.swapaxes(b, -1, -2), sa)
    gb_abs = _sum_to(np.swapaxes(a, -1, -2) @ r, sb)
    spread_a = int(np.prod(out_shape)) // int(np.prod(sa[:-1]) * sb[-1])
    spread_b = int(np.prod(out_shape)) // int(np.prod(sb[:-2]) * sa[-2] * sb[-1])
    _check(_np(da.grad), _np(ra.grad), (sb[-1] + spread_a) * EPS32 * ga_abs, "grad a")
    _check(_np(db.grad), _np(rb.grad), (sa[-2] + spread_b) * EPS32 * gb_abs, "grad b")


def test_repeated_runs_bitwise_identical(gpu, rng):
    a = sc.tensor(rng.standard_normal((70, 90)).astype(np.float32), device=gpu)
    b = sc.tensor(rng.standard_normal((90, 33)).astype(np.float32), device=gpu)
    first = (a @ b).tolist()
    for _ in range(2):
        assert (a @ b).tolist() == first


def test_pipeline_is_shared_across_shapes(gpu, rng):
    def mm(m, k, n):
        a = sc.tensor(rng.standard_normal((m, k)).astype(np.float32), device=gpu)
        b = sc.tensor(rng.standard_normal((k, n)).astype(np.float32), device=gpu)
        return a @ b

    mm(12, 20, 8)
    before = gpu.stats["pipelines"]
    mm(40, 8, 100)  # same variant: K and N multiples of 4, contiguous
    mm(3, 4, 4)
    assert gpu.stats["pipelines"] == before


def test_loader_variants_follow_the_layout():
    assert choose_side(64, 32, 32, 1, 0, []).along == "k"  # A row-major
    assert choose_side(64, 32, 1, 64, 0, []).along == "t"  # A transposed / B row-major
    assert choose_side(64, 32, 32, 1, 0, []).vec
    assert not choose_side(64, 30, 30, 1, 0, []).vec  # K not a multiple of 4
    assert not choose_side(64, 32, 32, 1, 2, []).vec  # misaligned offset
    assert not choose_side(64, 32, 32, 1, 0, [0, 6]).vec  # misaligned batch stride


@pytest.mark.parametrize("tile", sorted(TILES))
def test_every_tile_agrees(gpu, rng, tile):
    sa, sb = (2, 70, 36), (2, 36, 132)
    ra, da, a = _operand(rng, sa, True, gpu)
    rb, db, b = _operand(rng, sb, False, gpu)
    got = _np(apply("matmul", (da, db), _tile=tile))
    _check(got, _np(ra @ rb), _bound(a, b, sa[-1]), tile)


@pytest.mark.parametrize(
    "limits",
    [{"max_compute_invocations_per_workgroup": 64}, {"max_compute_workgroup_storage_size": 2048}],
)
def test_lowered_workgroup_limits_pick_smaller_tiles(gpu, rng, limits):
    small = WebGPUBackend(gpu=gpu.gpu, limits=limits)
    ra, da, a = _operand(rng, (45, 20), False, small)
    rb, db, b = _operand(rng, (20, 50), True, small)
    _check(_np(da @ db), _np(ra @ rb), _bound(a, b, 20))


@pytest.mark.parametrize("ta", [False, True])
def test_low_binding_and_grid_limits_match_default(gpu, rng, ta):
    # operands of 345-720 KB bound as 64 KiB windows; 72 workgroups under a cap of 8
    # need a 3-D grid; vec4 accessors must cross windows correctly
    small = WebGPUBackend(
        gpu=gpu.gpu,
        limits={
            "max_storage_buffer_binding_size": 65536,
            "max_compute_workgroups_per_dimension": 8,
        },
    )
    sa, sb = (6, 150, 96), (6, 96, 200)
    a = rng.standard_normal(sa[:-2] + sa[-2:][::-1] if ta else sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    results = []
    for dev in (gpu, small):
        da, db = sc.tensor(a, device=dev), sc.tensor(b, device=dev)
        results.append(_np((da.mT if ta else da) @ db))
    assert len(da.device_view.buf.handle.windows()) > 1
    assert fold_grid(6 * 3 * 4, small.limits) == (8, 8, 2)
    np.testing.assert_array_equal(results[1], results[0])


def test_f16_widens_and_accumulates_in_f32(gpu, rng):
    if not gpu.info.has_f16:
        pytest.skip("adapter lacks shader-f16")
    a = rng.standard_normal((33, 40)).astype(np.float16)
    b = rng.standard_normal((40, 12)).astype(np.float16)
    got = _np(sc.tensor(a, device=gpu) @ sc.tensor(b, device=gpu))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    bound = _bound(a64, b64, 40) + 2.0**-11 * np.abs(want)
    _check(got, want, bound, "f16")


# the register-tiled kernel (REGS) that large products take: ragged sizes (not multiples
# of any tile, K not a multiple of 4 for scalar loads), every layout, batched. Every tile
# that fits this adapter's workgroup memory is checked (r128x64s2 needs 48 KiB, which
# lavapipe lacks: it is the same generator as r64s4 (K groups) and r128 with other sizes)
REG_SHAPES = [
    # (A shape, B shape, A transposed, B transposed)
    ((70, 37), (37, 133), False, False),
    ((130, 200), (200, 66), True, False),
    ((33, 8), (8, 40), False, True),
    ((129, 65), (65, 67), True, True),
    ((2, 3, 40, 36), (2, 3, 36, 70), False, False),
    ((3, 2, 50, 20), (3, 2, 20, 44), True, True),
]


@pytest.mark.parametrize("sa,sb,ta,tb", REG_SHAPES)
def test_reg_tiles_agree(gpu, rng, sa, sb, ta, tb):
    fitting = sorted(t for t in REGS if REGS[t].fits(gpu.limits))
    assert len(fitting) >= 3, fitting  # every adapter the suite runs on has most of them
    ra, da, a = _operand(rng, sa, ta, gpu)
    rb, db, b = _operand(rng, sb, tb, gpu)
    for tile in fitting:
        got = _np(apply("matmul", (da, db), _tile=tile))
        _check(got, _np(ra @ rb), _bound(a, b, sa[-1]), f"{tile} {sa} @ {sb} ta={ta} tb={tb}")


def test_reg_tile_offset_views_and_repeats(gpu, rng):
    # misaligned slices take the scalar loaders; repeated runs are bitwise identical
    x = rng.standard_normal((90, 70)).astype(np.float32)
    y = rng.standard_normal((75, 81)).astype(np.float32)
    (rx, dx), (ry, dy) = _pair(x, gpu), _pair(y, gpu)
    ra, da, a = rx[1:, 2:67], dx[1:, 2:67], x[1:, 2:67].astype(np.float64)
    rb, db, b = ry[3:68, 1:], dy[3:68, 1:], y[3:68, 1:].astype(np.float64)
    for tile in sorted(t for t in REGS if REGS[t].fits(gpu.limits)):
        first = _np(apply("matmul", (da, db), _tile=tile))
        _check(first, _np(ra @ rb), _bound(a, b, 65), tile)
        np.testing.assert_array_equal(_np(apply("matmul", (da, db), _tile=tile)), first)


def test_reg_f16_widens_and_accumulates_in_f32(gpu, rng):
    if not gpu.info.has_f16:
        pytest.skip("adapter lacks shader-f16")
    a = rng.standard_normal((70, 40)).astype(np.float16)
    b = rng.standard_normal((40, 36)).astype(np.float16)
    da, db = sc.tensor(a, device=gpu), sc.tensor(b, device=gpu)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    bound = _bound(a64, b64, 40) + 2.0**-11 * np.abs(want)
    # (the tiles that multiply in f16, ``half_math``, have their own bound: test_matmul_f16)
    for tile in sorted(t for t in REGS if REGS[t].fits(gpu.limits) and not REGS[t].half_math):
        _check(_np(apply("matmul", (da, db), _tile=tile)), want, bound, f"f16 {tile}")


SPLIT_CASES = [
    # (M, K, N, A transposed, B transposed, parts, forced tile or None)
    (70, 64, 133, True, False, 2, None),
    (129, 96, 66, True, False, 4, "r64s4"),
    (33, 48, 40, False, True, 4, "r128"),
    (65, 80, 67, True, True, 2, "r64"),
    (40, 256, 36, False, False, 8, None),
    (131, 128, 70, True, False, 4, "r128x64"),
]


@pytest.mark.parametrize("m,k,n,ta,tb,parts,tile", SPLIT_CASES)
def test_k_split_agrees(gpu, rng, m, k, n, ta, tb, parts, tile):
    # K in ``parts`` chunks: a batched product of A and B views into scratch, then a sum
    assert tile is None or REGS[tile].fits(gpu.limits), f"{tile} does not fit this adapter"
    ra, da, a = _operand(rng, (m, k), ta, gpu)
    rb, db, b = _operand(rng, (k, n), tb, gpu)
    attrs = {"_split": parts} | ({"_tile": tile} if tile else {})
    launches = gpu.encode("matmul", [da.device_view, db.device_view], [da.device_view], attrs)
    assert len(launches) == 2  # the parts' product and their sum
    first = _np(apply("matmul", (da, db), **attrs))
    _check(first, _np(ra @ rb), _bound(a, b, k), f"split {parts} {tile}")
    np.testing.assert_array_equal(_np(apply("matmul", (da, db), **attrs)), first)


def test_only_large_products_take_the_reg_kernel(gpu):
    limits = gpu.limits
    # the test suite's and the examples' products keep the TILES kernel (bitwise unchanged)
    for m, k, n in [(64, 64, 64), (2048, 128, 384), (512, 64, 256), (4096, 64, 64)]:
        assert m * n * k < REG_MIN_WORK
        assert choose_reg(m, n, k, 1, limits) is None
    assert choose_reg(8192, 1152, 384, 1, limits) in REGS
    assert choose_reg(4096, 4096, 4096, 1, limits) in REGS
    assert choose_reg(4096, 4096, 8, 1, limits) is None  # too shallow a K
    # a weight gradient's shape (small M x N, long K) splits K; the others do not
    parts, tile = choose_split(384, 1152, 8192, 1, limits)
    assert parts > 1 and REGS[tile].fits(limits)
    assert choose_split(8192, 1152, 384, 1, limits) == (1, None)
    assert choose_split(64, 64, 64, 1, limits) == (1, None)
