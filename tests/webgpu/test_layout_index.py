"""WebGPU pad, concat, gather and scatter_add against the reference device.

These move values without arithmetic (scatter_add adds in np.add.at's order), so
forwards are compared bit for bit, on strided views, odd shapes and empty dims;
gradients through them (and through stack, embedding, cross_entropy) against the
reference in f64 with relative tolerances.
"""

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import WebGPUBackend

pytestmark = pytest.mark.webgpu
F = sc.functional
# 64 KiB bindings (a tensor over that is several windows) and an 8 x 8 workgroup grid
LOW_LIMITS = {"max_storage_buffer_binding_size": 65536, "max_compute_workgroups_per_dimension": 8}


def vals(t):
    return np.array(t.tolist(), dtype=np.float64)


def both(data, gpu, dtype="f32"):
    """The same values as a reference tensor and a webgpu tensor of ``dtype``."""
    return tuple(sc.tensor(data, device=d, dtype=dtype) for d in ("reference", gpu))


def idx_pair(data, gpu):
    return both(np.asarray(data, dtype=np.int32), gpu, "i32")


PAD_CASES = [
    # (base shape, view, lo, hi, interior, value)
    ((5, 7), lambda t: t, (1, 0), (2, 3), (1, 2), 2.5),
    ((129, 3), lambda t: t.mT, (0, 1), (1, 0), (0, 0), 0.0),
    ((259,), lambda t: t[1::2], (3,), (0,), (1,), -1.0),
    ((2, 1, 3), lambda t: t.expand((2, 4, 3)), (0, 1, 0), (1, 0, 2), (0, 3, 0), 7.0),
    ((2, 0, 3), lambda t: t, (1, 2, 0), (0, 1, 1), (0, 0, 1), 9.0),
]


@pytest.mark.parametrize("case", range(len(PAD_CASES)))
def test_pad_bitwise(gpu, rng, case):
    shape, view, lo, hi, interior, value = PAD_CASES[case]
    ref, dev = both(rng.standard_normal(shape).astype(np.float32), gpu)
    want = view(ref).pad(lo, hi, interior, value)
    got = view(dev).pad(lo, hi, interior, value)
    assert got.shape == want.shape
    assert got.tolist() == want.tolist()


def test_pad_integers_and_bool(gpu):
    data = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    for dtype, value in (("i32", -3), ("bool", True)):
        ref, dev = both(data if dtype == "i32" else data > 0, gpu, dtype)
        want = ref.mT.pad((1, 0), (0, 2), (1, 0), value).tolist()
        assert dev.mT.pad((1, 0), (0, 2), (1, 0), value).tolist() == want


def test_concat_views_along_each_axis(gpu, rng):
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3, 2)).astype(np.float32)  # permuted into (2, 3, 5)
    c = rng.standard_normal((2, 1, 5)).astype(np.float32)  # expanded
    d = rng.standard_normal((4, 6, 10)).astype(np.float32)  # stepped
    for axis in range(3):
        outs = []
        for dev in ("reference", gpu):
            ta, tb, tc, td = (sc.tensor(x, device=dev) for x in (a, b, c, d))
            parts = [ta, tb.permute(2, 1, 0), tc.expand((2, 3, 5)), td[::2, ::2, ::2]]
            empty = [s if i != axis else 0 for i, s in enumerate((2, 3, 5))]
            parts.insert(2, sc.zeros(tuple(empty), device=dev))
            outs.append(F.concat(parts, axis).tolist())
        assert outs[0] == outs[1]


def test_concat_many_inputs_one_dispatch_each(gpu, rng):
    xs = [rng.standard_normal((3, k + 1)).astype(np.float32) for k in range(40)]
    before = gpu.stats["dispatches"]
    got = F.concat([sc.tensor(x, device=gpu) for x in xs], 1)
    assert gpu.stats["dispatches"] - before == 40  # one slab write per input
    assert got.tolist() == np.concatenate(xs, 1).tolist()


def test_stack_and_integer_concat(gpu):
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    ref, dev = both(data, gpu, "i32")
    assert (
        F.stack([dev, dev.mT.mT, dev * 2], 1).tolist() == F.stack([ref, ref, ref * 2], 1).tolist()
    )


# -- gather / scatter_add --

GATHER_CASES = [
    # (x shape, idx shape, axis, x view): idx may be smaller than x off the axis
    ((5, 7), (3, 7), 0, "contig"),
    ((5, 7), (3, 4), 0, "contig"),
    ((5, 7), (4, 10), 1, "mT"),
    ((2, 3, 129), (2, 2, 40), 2, "step"),
]


@pytest.mark.parametrize("case", range(len(GATHER_CASES)))
def test_gather_bitwise(gpu, rng, case):
    shape, ishape, axis, view = GATHER_CASES[case]
    if view == "mT":
        base = rng.standard_normal(shape[::-1]).astype(np.float32)
        make = lambda t: t.mT
    elif view == "step":
        base = rng.standard_normal(tuple(2 * s for s in shape)).astype(np.float32)
        make = lambda t: t[::2, ::2, ::2]
    else:
        base = rng.standard_normal(shape).astype(np.float32)
        make = lambda t: t
    idx = rng.integers(0, shape[axis], ishape)
    ref, dev = both(base, gpu)
    ri, di = idx_pair(idx, gpu)
    want = make(ref).gather(ri, axis)
    assert make(dev).gather(di, axis).tolist() == want.tolist()
    # a broadcast (stride-0) index, as take/embedding make
    ri0, di0 = idx_pair(idx[:1], gpu)
    bshape = ishape
    assert (
        make(dev).gather(di0.expand(bshape), axis).tolist()
        == make(ref).gather(ri0.expand(bshape), axis).tolist()
    )


def test_gather_out_of_range_poisons(gpu):
    x = sc.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=gpu)
    _, di = idx_pair([[0, 3, 4, -1]], gpu)
    got = x.gather(di, 1).tolist()[0]
    assert got[:2] == [0.0, 3.0] and np.isnan(got[2]) and np.isnan(got[3])
    xi = sc.tensor(np.arange(12, dtype=np.int32).reshape(3, 4), device=gpu, dtype="i32")
    assert xi.gather(di, 1).tolist() == [[0, 3, -(2**31), -(2**31)]]


SCATTER_CASES = [
    # (src/idx shape, out shape, axis)
    ((3, 5), (4, 6), 0),
    ((3, 5), (3, 2), 1),
    ((2, 3, 70), (2, 4, 9), 2),
]


@pytest.mark.parametrize("case", range(len(SCATTER_CASES)))
def test_scatter_add_equals_reference_f32_bitwise(gpu, rng, case):
    shape, out_shape, axis = SCATTER_CASES[case]
    src = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(0, out_shape[axis], shape)
    ref, dev = both(src, gpu)
    ri, di = idx_pair(idx, gpu)
    # the same adds in the same order as np.add.at, so f32 equals f32 exactly
    want = ref.scatter_add(ri, axis, out_shape).tolist()
    assert dev.scatter_add(di, axis, out_shape).tolist() == want
    assert dev.mT.mT.scatter_add(di, axis, out_shape).tolist() == want


def test_scatter_add_integers_and_out_of_range(gpu):
    ref, dev = both(np.arange(6, dtype=np.int32).reshape(2, 3), gpu, "i32")
    ri, di = idx_pair([[0, 1, 1], [1, 1, 0]], gpu)
    assert dev.scatter_add(di, 0, (2, 3)).tolist() == ref.scatter_add(ri, 0, (2, 3)).tolist()
    x = sc.tensor(np.ones((2, 3), np.float32), device=gpu)
    _, bad = idx_pair([[0, 2, 0], [1, 0, 1]], gpu)  # 2 is out of range for 2 rows
    got = np.array(x.scatter_add(bad, 0, (2, 3)).tolist())
    assert np.isnan(got[:, 1]).all()  # the whole column of the bad index is poisoned
    assert got[:, 0].tolist() == [1.0, 1.0] and got[:, 2].tolist() == [1.0, 1.0]


# an index shared by every column (stride 0 off the axis, as embedding's gradient has):
# the row kernel, which must add the same values in the same order
ROW_CASES = [
    # (src shape, out shape, axis): more entries and columns than one workgroup takes,
    # out wider than src off the axis (uncovered columns stay 0), a middle axis
    ((300, 130), (17, 130), 0),
    ((300, 5), (3, 9), 0),
    ((2, 260, 3), (4, 11, 3), 1),
    ((4, 1), (6, 1), 0),
]


@pytest.mark.parametrize("case", range(len(ROW_CASES)))
def test_scatter_add_shared_index_bitwise(gpu, rng, case):
    shape, out_shape, axis = ROW_CASES[case]
    src = rng.standard_normal(shape).astype(np.float32)
    one = [1] * len(shape)
    one[axis] = shape[axis]
    idx = rng.integers(0, out_shape[axis], one)  # repeats: several entries per row
    ref, dev = both(src, gpu)
    ri, di = idx_pair(idx, gpu)
    want = ref.scatter_add(ri.expand(shape), axis, out_shape).tolist()
    assert dev.scatter_add(di.expand(shape), axis, out_shape).tolist() == want
    assert dev.mT.mT.scatter_add(di.expand(shape), axis, out_shape).tolist() == want
    small = WebGPUBackend(gpu=gpu.gpu, limits=LOW_LIMITS)  # a folded 3-D grid
    x, i = sc.tensor(src, device=small), sc.tensor(idx.astype(np.int32), device=small, dtype="i32")
    assert x.scatter_add(i.expand(shape), axis, out_shape).tolist() == want


def test_scatter_add_shared_index_integers_and_out_of_range(gpu, rng):
    data = rng.integers(-50, 50, (9, 4)).astype(np.int32)
    ref, dev = both(data, gpu, "i32")
    idx = rng.integers(0, 3, (9, 1))
    ri, di = idx_pair(idx, gpu)
    got = dev.scatter_add(di.expand((9, 4)), 0, (3, 5)).tolist()
    assert got == ref.scatter_add(ri.expand((9, 4)), 0, (3, 5)).tolist()
    x = sc.tensor(np.ones((3, 4), np.float32), device=gpu)
    _, bad = idx_pair([[0], [3], [1]], gpu)  # 3 is out of range for 3 rows
    got = np.array(x.scatter_add(bad.expand((3, 4)), 0, (3, 5)).tolist())
    assert np.isnan(got[:, :4]).all()  # the shared column holds it: every covered one
    assert got[:, 4].tolist() == [0.0, 0.0, 0.0]  # past the source: never written to


def test_embedding_gradient_takes_the_row_kernel(gpu, rng):
    from scellis.devices.webgpu.kernels.index import ROW_WG

    table = rng.standard_normal((50, 40)).astype(np.float32)
    tokens = rng.integers(0, 50, (6, 33)).astype(np.int32)
    grads = []
    for dev in ("reference", gpu):
        w = sc.tensor(table, device=dev, requires_grad=True)
        t = sc.tensor(tokens, device=dev, dtype="i32")
        (F.embedding(t, w) * F.embedding(t, w)).sum().backward()
        grads.append(np.array(w.grad.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-6)
    ri, di = idx_pair(tokens.reshape(-1, 1), gpu)
    src = gpu.encode(
        "scatter_add",
        [sc.tensor(rng.standard_normal((198, 40)).astype(np.float32), device=gpu).device_view,
         di.expand((198, 40)).device_view],
        [sc.zeros((50, 40), device=gpu).device_view],
        {"axis": 0, "shape": (50, 40)},
    )[0][0]  # fmt: skip
    assert f"@workgroup_size({ROW_WG})" in src.text() and "countTrailingZeros" in src.text()


def test_low_limits_gather_same_bits(gpu, rng):
    small = WebGPUBackend(gpu=gpu.gpu, limits=LOW_LIMITS)
    data = rng.standard_normal((300, 100)).astype(np.float32)  # 120 KB: two windows
    idx = rng.integers(0, 300, (7, 100)).astype(np.int32)
    tok = np.array([[0, 299, 150], [163, 164, 2]], dtype=np.int32)  # rows in both windows
    got = []
    for dev in (gpu, small):
        x = sc.tensor(data, device=dev)
        i, t = (sc.tensor(a, device=dev, dtype="i32") for a in (idx, tok))
        got.append((x.gather(i, 0).tolist(), F.embedding(t, x).tolist()))
    assert got[0] == got[1]
    assert got[0][0] == np.take_along_axis(data, idx, 0).tolist()


# -- gradients through layout and index ops, webgpu f32 against reference f64 --


def _grads(gpu, rng, fn, shapes, ints=()):
    out = []
    floats = [rng.standard_normal(s) for s in shapes]
    for dev in ("reference", gpu):
        ts = []
        for a in floats:
            t = sc.tensor(a.astype(np.float32), device=dev)
            if dev == "reference":
                t = sc.tensor(a.astype(np.float32).astype(np.float64), device=dev)
            ts.append(t.requires_grad_())
        ix = [sc.tensor(np.asarray(i, np.int32), device=dev, dtype="i32") for i in ints]
        y = fn(*ts, *ix)
        cot = np.random.default_rng(7).standard_normal(y.shape)
        (y * sc.tensor(cot, device=dev, dtype=y.dtype)).sum().backward()
        out.append([vals(t.grad) for t in ts])
    return zip(*out)


GRAD_CASES = {
    "pad": (lambda x: x.mT.pad((1, 0), (2, 1), (1, 0), 3.0), [(4, 5)], ()),
    "concat": (lambda a, b: F.concat([a, b.mT, a], 1), [(3, 4), (2, 3)], ()),
    "stack": (lambda a, b: F.stack([a, b[::2], a], 0), [(3, 4), (6, 4)], ()),
    "gather": (lambda x, i: x.gather(i, 1), [(3, 5)], ([[0, 4, 4, 1], [2, 2, 2, 2]],)),
    "embedding": (lambda w, i: F.embedding(i, w), [(10, 6)], ([[1, 3, 1], [9, 1, 0]],)),
    "cross_entropy": (
        lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
        [(6, 10)],
        ([3, 0, -100, 9, 3, -100],),
    ),
    "nll_sum": (
        lambda x, t: F.cross_entropy(x.log_softmax(-1), t, reduction="sum"),
        [(5, 129)],
        ([3, 0, 128, 64, 3],),
    ),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_agree(gpu, rng, name):
    fn, shapes, ints = GRAD_CASES[name]
    for want, got in _grads(gpu, rng, fn, shapes, ints):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * np.abs(want).max())
