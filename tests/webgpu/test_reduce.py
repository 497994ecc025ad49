"""WebGPU reductions and the composites over them against the reference device (f64).

sum is held to the bound its summation order gives (kernels.reduce.sum_error_bound:
|err| <= gamma_k * sum|x|); max, min and argmax are exact. The composites (mean, var,
softmax, log_softmax, layer_norm) and every gradient use relative tolerances a few
hundred f32 ulps wide at most.
"""

import itertools

import numpy as np
import pytest

import scellis as sc
from conftest import to_pair
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels.reduce import sum_error_bound

pytestmark = pytest.mark.webgpu
F = sc.functional
# 64 KiB bindings (a tensor over that is several windows) and an 8 x 8 workgroup grid
LOW_LIMITS = {"max_storage_buffer_binding_size": 65536, "max_compute_workgroups_per_dimension": 8}

U = 2.0**-24

# (logical shape, how the view is made): contiguous, a stepped slice, a transpose, a
# permutation and a stride-0 broadcast
CASES = [
    ((1,), "contig"),
    ((7,), "contig"),
    ((129,), "step"),
    ((1000,), "contig"),
    ((3, 129), "contig"),
    ((3, 129), "mT"),
    ((3, 129), "expand"),
    ((5, 70), "step"),
    ((2, 7, 65), "permute"),
    ((4, 3, 300), "contig"),
    # long reductions over a leading axis with contiguous outputs (the column path):
    # one chunk, several chunks through scratch, and the 64-chunk cap
    ((200, 5), "contig"),
    ((2, 700, 33), "contig"),
    ((17000, 2), "contig"),
    # few outputs over many terms (whole-tensor sums, a norm's sum of squares): the split
    # path's chunks, through a transposed view too
    ((9000,), "contig"),
    ((2, 8300), "mT"),
    ((300000,), "contig"),  # 73 chunks: the partials folded by the long path
]


def _base_shape(shape, view):
    if view == "step":
        return tuple(2 * d + 1 for d in shape)
    if view == "mT":
        return shape[:-2] + (shape[-1], shape[-2])
    if view == "permute":
        return (shape[2], shape[0], shape[1])
    if view == "expand":
        return (1,) + shape[1:]
    return shape


def _view(t, shape, view):
    if view == "step":
        return t[tuple(slice(1, None, 2) for _ in shape)]
    if view == "mT":
        return t.mT
    if view == "permute":
        return t.permute(1, 2, 0)
    if view == "expand":
        return t.expand(shape)
    return t


def make(gpu, rng, shape, view, requires_grad=False):
    """(reference f64, webgpu f32) tensors of logical ``shape`` reached through ``view``."""
    data = rng.standard_normal(_base_shape(shape, view))
    ref, dev = to_pair(data, gpu, requires_grad)
    a, b = _view(ref, shape, view), _view(dev, shape, view)
    assert a.shape == b.shape == shape
    return ref, dev, a, b


def vals(t):
    return np.array(t.tolist(), dtype=np.float64)


def subsets(nd):
    return [c for k in range(nd + 1) for c in itertools.combinations(range(nd), k)]


@pytest.mark.parametrize("shape,view", CASES, ids=lambda c: str(c))
def test_sum_max_min_all_axes(gpu, rng, shape, view):
    _, _, ref, dev = make(gpu, rng, shape, view)
    absx = ref.abs()
    for axes, keep in itertools.product(subsets(len(shape)), (False, True)):
        # an empty tuple of dims reduces every dim (torch's reading)
        r = int(np.prod([shape[a] for a in (axes or range(len(shape)))]))
        want, got = vals(ref.sum(axes, keepdim=keep)), vals(dev.sum(axes, keepdim=keep))
        assert got.shape == want.shape
        bound = sum_error_bound(r) * vals(absx.sum(axes, keepdim=keep)) * (1 + 1e-6)
        err = np.abs(got - want)
        assert (err <= bound).all(), f"sum{axes}: err {err.max():.3g} > {bound.max():.3g}"
        for op in ("amax", "amin"):
            want = vals(getattr(ref, op)(axes, keepdim=keep))
            np.testing.assert_array_equal(vals(getattr(dev, op)(axes, keepdim=keep)), want)


@pytest.mark.parametrize("shape,view", CASES, ids=lambda c: str(c))
def test_argmax_each_axis(gpu, rng, shape, view):
    _, _, ref, dev = make(gpu, rng, shape, view)
    for axis, keep in itertools.product(range(len(shape)), (False, True)):
        got = dev.argmax(axis, keepdim=keep)
        assert got.dtype == sc.i32
        assert got.tolist() == ref.argmax(axis, keepdim=keep).tolist()
    assert dev.argmax().tolist() == ref.argmax().tolist()


def test_argmax_first_of_ties_and_nan(gpu):
    rows = np.array([[1, 3, 3, 0], [2, np.nan, 5, np.nan], [-np.inf] * 4, [7, 7, 7, 7]])
    long = np.zeros((2, 700))
    long[0, [5, 300, 601]] = 4.0  # ties spread over threads and tree levels
    long[1, [650, 3]] = np.nan
    mid = np.zeros((2, 21))  # one invocation per row: ties across its blocks of reads
    mid[0, [2, 9, 17]] = 4.0
    mid[1, [20, 5, 12]] = np.nan
    for data in (rows, long, mid):
        ref, dev = (sc.tensor(data.astype(np.float32), device=d) for d in ("reference", gpu))
        assert dev.argmax(1).tolist() == ref.argmax(1).tolist()
        np.testing.assert_array_equal(vals(dev.amax(1)), vals(ref.amax(1)))
        np.testing.assert_array_equal(vals(dev.amin(1)), vals(ref.amin(1)))


def test_integer_reductions_exact(gpu, rng):
    data = rng.integers(-1000, 1000, (3, 129)).astype(np.int32)
    data[1, :] = 2**30  # wraps in 32 bits, as the reference's cast back does
    ref, dev = (sc.tensor(data, device=d, dtype="i32") for d in ("reference", gpu))
    for axis in (0, 1, None):
        for op in ("sum", "amax", "amin", "argmax"):
            assert getattr(dev, op)(axis).tolist() == getattr(ref, op)(axis).tolist(), (op, axis)


def test_f16_sum_accumulates_in_f32(gpu, rng):
    if not gpu.info.has_f16:
        pytest.skip("no shader-f16")
    for shape in ((3, 300), (700, 3)):  # (700, 3) over axis 0: chunk partials in f32
        data = rng.standard_normal(shape).astype(np.float16)
        ref, dev = (sc.tensor(data, device=d, dtype="f16") for d in ("reference", gpu))
        for axis in (0, 1):
            want = vals(ref.sum(axis))
            got = vals(dev.sum(axis))
            assert (np.abs(got - want) <= np.spacing(np.abs(want).astype(np.float16))).all()


def test_empty_axis_sums_to_zero(gpu):
    x = sc.tensor(np.zeros((3, 0), np.float32), device=gpu)
    assert x.sum(1).tolist() == [0.0, 0.0, 0.0]


def test_sum_bitwise_repeatable_over_long_axis(gpu, rng):
    data = rng.standard_normal((3, 50000)).astype(np.float32) * 100
    first = None
    for _ in range(3):
        x = sc.tensor(data, device=gpu)  # a fresh buffer each time
        got = (x.sum(1).tolist(), x.sum().tolist(), x.mT.sum(0).tolist())
        first = first or got
        assert got == first
    assert first[0] == first[2]  # the same order whether the view is transposed or not


@pytest.mark.parametrize("r", [3, 8, 13, 32, 64])
def test_short_sums_add_in_order(gpu, rng, r):
    """Up to 64 terms one invocation adds them first to last, whatever blocks it reads
    them in: the result is f32's sequential sum bit for bit (NumPy's cumsum, in order)."""
    data = (rng.standard_normal((r, 37)) * 10.0 ** rng.integers(-3, 4, (r, 37))).astype(np.float32)
    want = np.cumsum(data, axis=0, dtype=np.float32)[-1]
    x = sc.tensor(data, device=gpu)
    np.testing.assert_array_equal(np.array(x.sum(0).tolist(), np.float32), want)
    np.testing.assert_array_equal(np.array(x.mT.sum(1).tolist(), np.float32), want)


# one layout per path: short (R <= 64), long (a contiguous row), split (few outputs, many
# terms), column (contiguous outputs over a strided axis); R not a multiple of the block
PATH_LAYOUTS = [((13, 37), 0), ((3, 5003), 1), ((20011,), 0), ((3001, 70), 0)]


@pytest.mark.parametrize("shape, axis", PATH_LAYOUTS, ids=str)
def test_reading_ahead_keeps_every_bit(gpu, rng, monkeypatch, shape, axis):
    """The reads ahead of the folds change no bit: every path's sums (and max, argmax)
    equal those of the same kernels reading one element at a time."""
    from scellis.devices.webgpu.kernels import reduce as kernels

    data = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)

    def results():
        x = sc.tensor(data, device=gpu)
        return [np.array(t.tolist()) for t in (x.sum(axis), x.amax(axis), x.argmax(axis))]

    ahead = results()
    monkeypatch.setattr(kernels, "READ_AHEAD", 1)
    for got, want in zip(results(), ahead):
        np.testing.assert_array_equal(got, want)


def test_low_limits_give_the_same_bits(gpu, rng):
    small = WebGPUBackend(gpu=gpu.gpu, limits=LOW_LIMITS)
    data = rng.standard_normal((130, 200)).astype(np.float32)  # 104 KB: two binding windows
    a, b = sc.tensor(data, device=gpu), sc.tensor(data, device=small)
    for axis in (0, 1, None):  # 200 / 130 / 1 outputs: past 64 workgroups, the grid loops
        assert b.sum(axis).tolist() == a.sum(axis).tolist()
        assert b.amax(axis).tolist() == a.amax(axis).tolist()
    assert b.argmax(0).tolist() == a.argmax(0).tolist()
    short = rng.standard_normal((300, 60)).astype(np.float32)  # R <= 64: one thread per row
    assert (
        sc.tensor(short, device=small).sum(1).tolist()
        == sc.tensor(short, device=gpu).sum(1).tolist()
    )


# -- composites over the reductions --

COMPOSITE_CASES = [((7,), "contig"), ((3, 129), "mT"), ((5, 70), "step"), ((4, 3, 300), "contig")]


@pytest.mark.parametrize("shape,view", COMPOSITE_CASES, ids=lambda c: str(c))
def test_mean_var_within_bounds(gpu, rng, shape, view):
    _, _, ref, dev = make(gpu, rng, shape, view)
    for axes in subsets(len(shape))[1:]:
        r = int(np.prod([shape[a] for a in axes]))
        want, got = vals(ref.mean(axes, keepdim=True)), vals(dev.mean(axes, keepdim=True))
        bound = (sum_error_bound(r) + 4 * U) * vals(ref.abs().mean(axes, keepdim=True))
        assert (np.abs(got - want) <= bound).all(), axes
        if r > 1:
            np.testing.assert_allclose(vals(dev.var(axes)), vals(ref.var(axes)), rtol=2e-5)


@pytest.mark.parametrize("shape,view", COMPOSITE_CASES, ids=lambda c: str(c))
def test_softmax_log_softmax_layer_norm(gpu, rng, shape, view):
    _, _, ref, dev = make(gpu, rng, shape, view)
    for axis in range(len(shape)):
        np.testing.assert_allclose(
            vals(dev.softmax(axis)), vals(ref.softmax(axis)), rtol=1e-5, atol=1e-7
        )
        np.testing.assert_allclose(
            vals(dev.log_softmax(axis)), vals(ref.log_softmax(axis)), rtol=1e-5, atol=1e-6
        )
    np.testing.assert_allclose(
        vals(F.layer_norm(dev, shape[-1:])), vals(F.layer_norm(ref, shape[-1:])), atol=2e-5
    )


def _grad_pair(gpu, rng, shape, view, fn, extra=()):
    """Gradients of sum(fn(x, *extra) * R) on both devices, for x and each extra input."""
    base_ref, base_dev, ref, dev = make(gpu, rng, shape, view, requires_grad=True)
    extras = [to_pair(rng.standard_normal(s), gpu, requires_grad=True) for s in extra]
    ins_ref = [base_ref] + [a for a, _ in extras]
    ins_dev = [base_dev] + [b for _, b in extras]
    args_ref, args_dev = [ref] + ins_ref[1:], [dev] + ins_dev[1:]
    out_ref = fn(*args_ref)
    cot = rng.standard_normal(out_ref.shape)
    c_ref, c_dev = to_pair(cot, gpu)
    (out_ref * c_ref).sum().backward()
    (fn(*args_dev) * c_dev).sum().backward()
    return [(vals(a.grad), vals(b.grad)) for a, b in zip(ins_ref, ins_dev)]


GRAD_FNS = {
    "sum": lambda x: x.sum((0, -1)),
    "max": lambda x: x.amax(-1),
    "min": lambda x: x.amin(0, keepdim=True),
    "mean": lambda x: x.mean(-1),
    "var": lambda x: x.var(0),
    "softmax": lambda x: x.softmax(-1),
    "log_softmax": lambda x: x.log_softmax(0),
    "logsumexp": lambda x: x.logsumexp(-1),
}


@pytest.mark.parametrize("name", sorted(GRAD_FNS))
@pytest.mark.parametrize("shape,view", [((4, 7), "contig"), ((3, 129), "mT")], ids=str)
def test_gradients_agree(gpu, rng, name, shape, view):
    ((want, got),) = _grad_pair(gpu, rng, shape, view, GRAD_FNS[name])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_layer_norm_gradients_agree(gpu, rng):
    fn = lambda x, w, b: F.layer_norm(x, 129, w, b)
    for want, got in _grad_pair(gpu, rng, (3, 129), "mT", fn, extra=[(129,), (129,)]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
