"""Every row of the op case table on WebGPU (f32) against the reference device (f64).

Each row of ``tests/reference/cases*.py`` runs twice on the same inputs, drawn by the
row and rounded to f32 once: on ``webgpu`` in f32 and on ``reference`` in f64. The
forward result and the gradient of every differentiated input (cotangent R, f32 normal
draws, the same on both) are compared. Both devices must also dispatch the same set of
primitives in each phase (casts to a tensor's own dtype and cached scalar constants
aside), so every primitive the table reaches runs as WGSL and no row takes another path.

Tolerances, per phase (forward; backward), picked from the primitives the reference
device dispatched in that phase (``u = 2**-24``, the f32 unit roundoff):

- **Exact.** A non-float result (compare, argmax, logical ops, int sign) must be equal.
  A phase that dispatches only exact primitives (``EXACT_OPS``: data movement, select,
  compare, max/min, sign, clamp, relu, abs, neg, constants, Philox draws) must be
  bitwise equal to the f64 result: every value it produces is an f32 input value.
- **One elementwise op.** A forward that dispatches a single rounding primitive of the
  unary or binary family (moves and constants around it allowed) is held per element to
  4 ulp-equivalents, the bound of ``test_elementwise.py``: one unit is one f32 ulp of the
  result plus, for every float input, how far the exact result moves when that input
  moves by one f32 ulp (``conftest.ulp_equivalent_error`` with several inputs; the move
  is measured in f64 on the reference device by a central difference of one f32 ulp).
- **Everything else** (composites, reductions, matmul, losses, the recurrent primitive,
  and every backward with rounding in it, the VJP being itself a composite) is held
  normwise: ``max|got - want| <= C * n * u * max|want|`` with ``C = 4`` and ``n`` the
  accumulation length of the phase: the sum over its dispatched rounding primitives of
  1 per elementwise op, the reduced count of a ``sum``, the contracted length K of a
  ``matmul``, the extent along the scattered axis of a ``scatter_add``, the taps of a
  ``time_fold``, for the fused recurrent ops, steps x (gate width + 10) and, for the
  row norm, the sums of D terms it takes per row (2 forward, 4 backward) plus its
  elementwise steps. It grows
  with the reduction length as the summation error bound gamma_n does; non-finite
  entries must match in place.

Rows that cannot run on this adapter are listed in ``excluded`` with the reason and
reported as skips with that reason: today only the f16 rows (``NEEDS_F16``) where the
adapter lacks ``shader-f16``. No row needs f64 on the device (``NEEDS_F64`` is empty);
a row that did would fail here with a DeviceError until listed there.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reference"))

from cases import ALL_CASES  # noqa: E402
from cases_f16 import F16_CASES  # noqa: E402

import scellis as sc  # noqa: E402
from conftest import spacing32  # noqa: E402
from helpers import values  # noqa: E402
from inputs import case_rng  # noqa: E402
from scellis.devices import get_device  # noqa: E402
from scellis.ops.table import get_op  # noqa: E402

pytestmark = pytest.mark.webgpu

U = 2.0**-24
C = 4  # normwise bound: C * n * u
ULP_EQ = 4  # single elementwise op: ulp-equivalents per element

# rows whose maths rounds through f16 (the device must have shader-f16)
NEEDS_F16 = {"cast_f16": "rounds through f16: needs the adapter's shader-f16"}
# rows that need f64 on the device (WGSL has none): none today
NEEDS_F64: dict[str, str] = {}

EXACT_OPS = frozenset(
    {
        *("copy", "cast", "gather", "pad", "concat", "where", "clamp", "full", "arange"),
        *("neg", "abs", "relu", "sign", "maximum", "minimum", "max", "min", "argmax"),
        *("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not"),
        *("rand_uniform", "bernoulli", "flat_gather", "time_unfold"),
    }
)
ELEMENTWISE_FAMILIES = ("unary", "binary")


def excluded(gpu) -> dict[str, str]:
    """Row name -> why it cannot run on ``gpu``."""
    out = dict(NEEDS_F64)
    if not gpu.supports(sc.f16):
        out.update(NEEDS_F16)
    return out


# -- what a row dispatches --


@dataclass(frozen=True)
class Call:
    op: str
    ins: tuple  # input shapes
    outs: tuple  # output shapes
    attrs: dict
    dtypes: tuple  # input and output dtype names


def _numel(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def accumulation_length(call: Call) -> int:
    """How many roundings deep one output element of ``call`` is (0: exact)."""
    op = call.op
    if op in EXACT_OPS:
        return 0
    if op == "sum":
        return max(1, _numel(call.ins[0]) // max(1, _numel(call.outs[0])))
    if op in ("matmul", "qmatmul"):  # qmatmul: one more rounding, the code times its scale
        return call.ins[0][-1] + (op == "qmatmul")
    if op == "scatter_add":
        return call.ins[0][call.attrs["axis"] % len(call.ins[0])]
    if op in ("lstm_seq", "gru_seq"):  # gx [B, T, G*H]
        return call.ins[0][1] * (call.ins[0][-1] + 10)
    if op in ("lstm_seq_backward", "gru_seq_backward"):  # (g, y [T, ...], ..., w [G*H, H])
        return call.ins[1][0] * (call.ins[-1][0] + 10)
    if op in ("flash_attention", "flash_attention_backward"):  # q [B, H, T, D], k [.., S, D]
        (t, d), s = call.ins[0][2:], call.ins[1][2]
        return s + d + 10 if op == "flash_attention" else t + s + 2 * d + 10
    if op == "dense_act":  # x [M, K]: K products, the bias, the activation
        return call.ins[0][-1] + 10
    if op == "dense_act_backward":  # y [2, M, N]: M rows summed per column
        return call.ins[1][1] + 10
    if op == "time_fold":  # each step sums at most one column per tap
        return call.attrs["size"]
    if op == "softmax_xent":  # x [R, C]: C terms per row's sums, then R rows' mean
        return call.ins[0][1] + call.ins[0][0] + 10
    if op in ("row_norm", "row_norm_backward"):  # x [..., D]: 2 (4) row sums, then products
        d = call.ins[0][-1]
        return 2 * d + 8 if op == "row_norm" else 4 * d + 10
    if get_op(op).family in ELEMENTWISE_FAMILIES + ("where",):
        return 1
    raise AssertionError(f"{op}: no accumulation length known; add it here")


@contextlib.contextmanager
def spying(dev):
    """Record every primitive ``dev`` runs inside the block."""
    calls: list[Call] = []
    inner = dev.run

    def spy(op, inputs, outputs, attrs):
        dts = tuple(v.dtype.name for v in list(inputs) + list(outputs))
        calls.append(
            Call(op, tuple(v.shape for v in inputs), tuple(v.shape for v in outputs), attrs, dts)
        )
        return inner(op, inputs, outputs, attrs)

    patched = vars(dev).get("run")  # another spy already in place stays in place
    dev.run = spy
    try:
        yield calls
    finally:
        if patched is None:
            del dev.run
        else:
            dev.run = patched


@dataclass
class Result:
    out: np.ndarray
    dtype: str
    grads: dict  # input index -> gradient array (None: no gradient reached it)
    fwd: list
    bwd: list


def _put(a: np.ndarray, dev, fdt: str, requires_grad: bool):
    if a.dtype.kind == "f":
        host = a.astype(np.float32).astype(np.float64 if fdt == "f64" else np.float32)
        return sc.tensor(host, device=dev, dtype=fdt, requires_grad=requires_grad)
    if a.dtype.kind == "b":
        return sc.tensor(a, device=dev, dtype="bool")
    return sc.tensor(a.astype(np.int32), device=dev, dtype="i32")


@contextlib.contextmanager
def default_device(name: str):
    before = sc.default_device().name
    sc.set_default_device(name)
    try:
        yield
    finally:
        sc.set_default_device(before)


def run_row(case, dev_name: str, arrays, diff) -> Result:
    """Forward, then backward with the row's cotangent, on one device (f32 or f64)."""
    fdt = "f64" if dev_name == "reference" else "f32"
    dev = get_device(dev_name)
    ts = [_put(a, dev_name, fdt, i in diff) for i, a in enumerate(arrays)]

    def scope():
        # rows with no tensor inputs (full, arange) create on the default device; rows
        # with inputs must keep every tensor they make on their inputs' device
        return default_device(dev_name) if not ts else contextlib.nullcontext()

    grads, bwd = {}, []
    with scope(), spying(dev) as fwd:
        out = case.fn(*ts)
    got = values(out)
    if diff and out.dtype.is_float:
        r = case_rng(case.name, 2).standard_normal(out.shape).astype(np.float32)
        with scope(), spying(dev) as bwd:
            out.backward(sc.tensor(r, device=dev_name, dtype=fdt))
        for i in diff:
            g = ts[i].grad
            grads[i] = None if g is None else values(g).reshape(arrays[i].shape)
    return Result(got, out.dtype.name, grads, fwd, bwd)


# -- the bounds --


def _same_nonfinite(got, want, what):
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaNs differ"
    inf_g, inf_w = np.isinf(got), np.isinf(want)
    assert np.array_equal(inf_g, inf_w) and np.array_equal(got[inf_g], want[inf_w]), (
        f"{what}: infinities differ"
    )
    return np.isfinite(want)


def check_exact(got, want, what):
    assert np.array_equal(got, want.astype(np.float32).astype(np.float64), equal_nan=True), (
        f"{what}: not bitwise equal; max |diff| {np.nanmax(np.abs(got - want)):.3g}"
    )


def check_normwise(got, want, n, what):
    ok = _same_nonfinite(got, want, what)
    g, w = got[ok], want[ok]
    if w.size == 0:
        return
    err, scale = np.abs(g - w).max(), max(np.abs(w).max(), np.finfo(np.float32).tiny)
    rtol = C * max(n, 1) * U
    assert err <= rtol * scale, (
        f"{what}: normwise error {err / scale / U:.1f} u over the bound {C} * n={n} u"
    )


def elementwise_units(case, arrays, want) -> np.ndarray:
    """One ulp-equivalent per output element: ulp(want) plus the move of the exact result
    when each float input moves by one f32 ulp (the mean of the two one-sided moves, in
    f64; a side that leaves the domain, such as a negative base of pow, is left out)."""
    unit = spacing32(want)
    for j, a in enumerate(arrays):
        if a.dtype.kind != "f":
            continue
        x = a.astype(np.float32).astype(np.float64)
        step = spacing32(x)
        moved = []
        for sign in (1.0, -1.0):
            shifted = [
                b.astype(np.float32).astype(np.float64) if b.dtype.kind == "f" else b
                for b in arrays
            ]
            shifted[j] = x + sign * step
            with sc.no_grad():
                t = case.fn(*[_put_exact(b) for b in shifted])
            moved.append(values(t).astype(np.float64))
        sides = np.stack([np.abs(moved[0] - want), np.abs(want - moved[1])])
        finite = np.isfinite(sides)
        move = np.where(finite, sides, 0.0).sum(0) / np.maximum(finite.sum(0), 1)
        unit = unit + move
    return unit


def _put_exact(b):
    """A reference tensor holding ``b`` as is (f64, no rounding to f32)."""
    if b.dtype.kind == "f":
        return sc.tensor(b.astype(np.float64), device="reference", dtype="f64")
    return _put(b, "reference", "f64", False)


def single_elementwise(calls) -> bool:
    rounding = [c for c in calls if accumulation_length(c) > 0]
    return len(rounding) == 1 and get_op(rounding[0].op).family in ELEMENTWISE_FAMILIES


def phase_length(calls) -> int:
    return sum(accumulation_length(c) for c in calls)


def op_names(calls) -> set:
    return {c.op for c in calls}


# -- the tests --


@pytest.fixture(scope="module")
def reasons(gpu):
    return excluded(gpu)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.name)
def test_row_on_webgpu(gpu, reasons, case):
    if case.name in reasons:
        pytest.skip(f"{case.name}: {reasons[case.name]}")
    arrays = case.arrays()
    diff = case.diff(arrays)
    ref = run_row(case, "reference", arrays, diff)
    dev = run_row(case, "webgpu", arrays, diff)

    for phase, a, b in (("forward", dev.fwd, ref.fwd), ("backward", dev.bwd, ref.bwd)):
        # a cast to the dtype a tensor already has dispatches nothing (cast_f32 in f32),
        # and scalar constants are made once per device and value (a cache)
        skip = {"cast", "full"}
        assert op_names(a) - skip == op_names(b) - skip, f"{phase}: other primitives"
    got, want = dev.out.astype(np.float64), ref.out.astype(np.float64)
    assert got.shape == want.shape
    is_float = ref.dtype == "f64"
    assert dev.dtype == ("f32" if is_float else ref.dtype), (dev.dtype, ref.dtype)

    if not is_float:
        assert np.array_equal(dev.out, ref.out), "non-float result differs"
    elif phase_length(ref.fwd) == 0:
        check_exact(got, want, "forward")
    elif single_elementwise(ref.fwd):
        ok = _same_nonfinite(got, want, "forward")
        err = np.abs(got - want)[ok] / elementwise_units(case, arrays, want)[ok]
        assert err.max(initial=0.0) <= ULP_EQ, f"forward: {err.max():.2f} ulp-equivalents"
    else:
        check_normwise(got, want, phase_length(ref.fwd), "forward")

    n_bwd = phase_length(ref.bwd)
    for i in diff:
        gw, gg = ref.grads.get(i), dev.grads.get(i)
        assert (gw is None) == (gg is None), f"grad {i}: present on one device only"
        if gw is None:
            continue
        if n_bwd == 0:
            check_exact(gg, gw, f"grad {i}")
        else:
            check_normwise(gg, gw, n_bwd, f"grad {i}")


def test_excluded_rows_are_rows_and_f16_rows_are_listed():
    names = {c.name for c in ALL_CASES}
    assert set(NEEDS_F16) <= names and set(NEEDS_F64) <= names
    # a row that casts to f16 anywhere (forward or backward) must be in NEEDS_F16
    touches_f16 = set()
    for case in ALL_CASES:
        arrays = case.arrays()
        res = run_row(case, "reference", arrays, case.diff(arrays))
        if any("f16" in c.dtypes for c in res.fwd + res.bwd):
            touches_f16.add(case.name)
    assert touches_f16 == set(NEEDS_F16)


# -- the f16 kernels (mixed precision) against the reference device's f16 emulation --

U16 = 2.0**-11  # f16 unit roundoff


def _f16_exact(arrays):
    """Inputs that f16 holds exactly, so the casts into f16 round nothing on either device."""
    return [a.astype(np.float16).astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]


@pytest.mark.parametrize("case", F16_CASES, ids=lambda c: c.name)
def test_f16_row_on_webgpu(gpu, case):
    """Both devices widen the f16 inputs, compute in f32 and round each stored value (the
    packed step, the carries, the gradients) to f16 once, so the phase's rounding model is
    the f32 one with f16's unit roundoff: normwise ``C * n * U16`` with the same n (the
    f32 arithmetic inside adds n * u, 2^-13 of that)."""
    if not gpu.supports(sc.f16):
        pytest.skip(f"{case.name}: {NEEDS_F16['cast_f16']}")
    arrays = _f16_exact(case.arrays())
    diff = case.diff(arrays)
    ref = run_row(case, "reference", arrays, diff)
    dev = run_row(case, "webgpu", arrays, diff)
    for a, b in ((dev.fwd, ref.fwd), (dev.bwd, ref.bwd)):
        assert op_names(a) - {"cast", "full"} == op_names(b) - {"cast", "full"}
    assert any("f16" in c.dtypes for c in dev.fwd + dev.bwd if c.op != "cast")
    got, want = dev.out.astype(np.float64), ref.out.astype(np.float64)
    _f16_normwise(got, want, phase_length(ref.fwd), "forward")
    for i in diff:
        _f16_normwise(dev.grads[i], ref.grads[i], phase_length(ref.bwd), f"grad {i}")


def _f16_normwise(got, want, n, what):
    ok = _same_nonfinite(got, want, what)
    err, scale = np.abs(got[ok] - want[ok]).max(), np.abs(want[ok]).max()
    assert scale > 0, f"{what}: all zero"
    assert err <= C * n * U16 * scale, (
        f"{what}: normwise error {err / scale / U16:.1f} u16 over the bound {C} * n={n} u16"
    )
