"""WebGPU elementwise kernels against the reference device (f64) on random inputs.

Tolerance: 4 ulp-equivalents (see conftest.ulp_equivalent_error): 4 f32 ulps of the
result plus 4 times what one f32 ulp of the input moves the exact result. For
well-conditioned ops that is plain 4 ulp; in the gelu left tails, where the exact
answer moves by several ulps when x moves by one, it allows for that conditioning.
"""

import numpy as np
import pytest

import scellis as sc
from conftest import spacing32, to_pair, ulp_equivalent_error, ulp_error

pytestmark = pytest.mark.webgpu

SHAPES = [(1,), (7,), (129,), (1000,), (3, 5, 7)]

UNARY = {
    "exp": lambda r: r.standard_normal(1000) * 4,
    "log": lambda r: np.abs(r.standard_normal(1000)) * 3 + 1e-3,
    "sqrt": lambda r: np.abs(r.standard_normal(1000)) * 3 + 1e-3,
    "rsqrt": lambda r: np.abs(r.standard_normal(1000)) * 3 + 1e-3,
    "tanh": lambda r: r.standard_normal(1000) * 3,
    "sigmoid": lambda r: r.standard_normal(1000) * 5,
    "gelu_tanh": lambda r: r.uniform(-3, 4, 1000),
    "gelu_erf": lambda r: r.uniform(-3, 4, 1000),
    "silu": lambda r: r.standard_normal(1000) * 5,
    "softplus": lambda r: r.standard_normal(1000) * 8,
    "erf": lambda r: r.standard_normal(1000) * 2,
    "sin": lambda r: r.uniform(-6, 6, 1000),
    "cos": lambda r: r.uniform(-6, 6, 1000),
    "neg": lambda r: r.standard_normal(1000),
    "abs": lambda r: r.standard_normal(1000),
    "relu": lambda r: r.standard_normal(1000),
    "sign": lambda r: r.standard_normal(1000),
    "square": lambda r: r.standard_normal(1000),
}


def _values(t):
    return np.array(t.tolist(), dtype=np.float64)


def _check_unary(gpu, op, data, bound=4):
    ref, dev = to_pair(data, gpu)
    ref.requires_grad_()
    out = getattr(ref, op)()
    if out.requires_grad:  # sign has no gradient: its slope is 0 almost everywhere
        out.sum().backward()
    slope = _values(ref.grad) if ref.grad is not None else np.zeros(data.shape)
    want, got = _values(out), _values(getattr(dev, op)())
    assert got.shape == want.shape
    x32 = data.astype(np.float32)
    err = ulp_equivalent_error(got, want, x32, slope)
    assert err.max() <= bound, f"{op}: {err.max():.1f} ulp-eq at x={x32.flat[err.argmax()]}"
    return ulp_error(got, want)


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_within_4_ulp_equivalents(gpu, rng, op, shape):
    _check_unary(gpu, op, UNARY[op](rng)[: int(np.prod(shape))].reshape(shape))


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "sin", "cos", "erf", "log"])
def test_well_conditioned_ops_within_4_plain_ulp(gpu, rng, op):
    data = UNARY[op](rng)
    if op in ("sin", "cos"):
        data = rng.uniform(-1.2, 1.2, 1000)  # away from the zeros of sin and cos
    if op == "log":
        data = rng.uniform(1.5, 50, 1000)
    assert _check_unary(gpu, op, data).max() <= 4


# gelu_tanh's tail is exp(-2z) with z = c (x + 0.044715 x^3) ~ -35 at x = -9: the f32
# roundings inside z (not just of x) each move the result by |2z| eps, about 70 ulp
TAIL_BOUND = {"gelu_tanh": 128, "gelu_erf": 4, "softplus": 4, "silu": 4, "sigmoid": 4}


@pytest.mark.parametrize("op", sorted(TAIL_BOUND))
def test_left_tails(gpu, rng, op):
    _check_unary(gpu, op, rng.uniform(-9, -3, 500), TAIL_BOUND[op])


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize(
    "sa,sb", [((7,), (7,)), ((129, 1), (1, 5)), ((3, 1, 7), (7,)), ((1,), (1000,)), ((), (4, 3))]
)
def test_binary_broadcast(gpu, rng, op, sa, sb):
    a = rng.standard_normal(sa) * 2
    b = rng.standard_normal(sb) * 2
    if op == "pow":
        a = np.abs(a) + 0.1
    if op == "div":
        b = np.sign(b) * (np.abs(b) + 0.1)
    ra, da = to_pair(a, gpu)
    rb, db = to_pair(b, gpu)
    want, got = _values(getattr(ra, op)(rb)), _values(getattr(da, op)(db))
    if op in ("pow", "div"):  # conditioned on both inputs: a^b moves |b ln a| ulp per ulp of b
        shape = np.broadcast_shapes(a.shape, b.shape)
        a_b = np.broadcast_to(a.astype(np.float32), shape)
        b_b = np.broadcast_to(b.astype(np.float32), shape)
        da_slope = _partial(op, a_b, b_b, 0)
        db_slope = _partial(op, a_b, b_b, 1)
        err = np.abs(got - want) / (
            spacing32(want) + spacing32(a_b) * np.abs(da_slope) + spacing32(b_b) * np.abs(db_slope)
        )
    else:
        err = ulp_error(got, want)
    assert err.max() <= 4


def _partial(op, a, b, which):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if op == "pow":
        return b * a ** (b - 1) if which == 0 else a**b * np.log(a)
    return 1 / b if which == 0 else -a / (b * b)


def test_pow_negative_base_integer_exponent(gpu, rng):
    a = -np.abs(rng.standard_normal(64)) - 0.2
    b = rng.integers(-3, 4, 64).astype(np.float64)
    ra, da = to_pair(a, gpu)
    rb, db = to_pair(b, gpu)
    want, got = _values(ra.pow(rb)), _values(da.pow(db))
    assert ulp_error(got, want).max() <= 4
    half = sc.tensor(np.full(4, 0.5, np.float32), device=gpu)
    assert np.isnan(_values(da[:4].pow(half))).all()


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(gpu, rng, op):
    a = rng.integers(-3, 3, (9, 13)).astype(np.float64)
    b = rng.integers(-3, 3, (13,)).astype(np.float64)
    ra, da = to_pair(a, gpu)
    rb, db = to_pair(b, gpu)
    assert getattr(da, op)(db).tolist() == getattr(ra, op)(rb).tolist()


def test_where_clamp_cast(gpu, rng):
    a = rng.standard_normal((17, 9))
    b = rng.standard_normal((9,))
    ra, da = to_pair(a, gpu)
    rb, db = to_pair(b, gpu)
    assert da.where(da > db, db).tolist() == ra.where(ra > rb, rb).cast("f32").tolist()
    assert da.clamp(-0.5, 0.7).tolist() == ra.clamp(-0.5, 0.7).cast("f32").tolist()
    assert da.clamp(min=0.1).tolist() == ra.clamp(min=0.1).cast("f32").tolist()
    ints = (da * 10.0).cast("i32")
    assert ints.tolist() == (ra * 10.0).cast("f32").cast("i32").tolist()
    assert ints.cast("bool").tolist() == (ra * 10.0).cast("f32").cast("i32").cast("bool").tolist()
    assert (ints // 3).tolist() == ((ra * 10.0).cast("f32").cast("i32") // 3).tolist()


def test_strided_views(gpu, rng):
    a = rng.standard_normal((6, 10, 4))
    ra, da = to_pair(a, gpu)
    for f in (
        lambda t: t.permute(2, 0, 1).exp(),
        lambda t: t[1:5:2, ::3, 1:].tanh(),
        lambda t: t.mT.sigmoid() * t.mT,
        lambda t: t[:, 3:4, :].expand(6, 5, 4) + 1.0,
    ):
        assert ulp_error(_values(f(da)), _values(f(ra))).max() <= 4


def test_f16_when_supported(gpu, rng):
    if not gpu.supports(sc.f16):
        with pytest.raises(sc.ScellisError):
            sc.tensor([1.0], device=gpu, dtype="f16")
        return
    a = rng.standard_normal(257).astype(np.float16)
    ref = sc.tensor(a, device="reference")
    dev = sc.tensor(a, device=gpu)
    for op in ("exp", "tanh", "gelu_erf"):
        want = np.array(getattr(ref, op)().tolist(), np.float16)
        got = np.array(getattr(dev, op)().tolist(), np.float16)
        # both widen to f32, compute, round once: at most one f16 ulp apart
        spacing = np.spacing(np.abs(want)).astype(np.float64)
        assert (np.abs(got.astype(np.float64) - want) <= spacing + 1e-7).all()


UNARY_GRAD = [
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "gelu_tanh",
    "gelu_erf",
    "silu",
    "softplus",
    "erf",
    "sin",
    "cos",
    "abs",
    "relu",
    "neg",
]


@pytest.mark.parametrize("op", UNARY_GRAD)
def test_unary_gradients_match_reference(gpu, rng, op):
    data = (
        np.abs(rng.standard_normal((5, 7))) + 0.2
        if op in ("log", "sqrt", "rsqrt")
        else rng.standard_normal((5, 7)) * 2
    )
    weights = rng.standard_normal((5, 7))
    grads = []
    for dev in ("reference", gpu):
        dt = "f64" if dev == "reference" else "f32"
        x = sc.tensor(data.astype(np.float32), device=dev, dtype=dt, requires_grad=True)
        w = sc.tensor(weights.astype(np.float32), device=dev, dtype=dt)
        (getattr(x, op)() * w).sum().backward()
        grads.append(np.array(x.grad.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("op", BINARY)
def test_binary_gradients_match_reference(gpu, rng, op):
    a = np.abs(rng.standard_normal((4, 6))) + 0.3
    b = np.abs(rng.standard_normal((6,))) + 0.3
    out = []
    for dev in ("reference", gpu):
        dt = "f64" if dev == "reference" else "f32"
        x = sc.tensor(a.astype(np.float32), device=dev, dtype=dt, requires_grad=True)
        y = sc.tensor(b.astype(np.float32), device=dev, dtype=dt, requires_grad=True)
        getattr(x, op)(y).sum().backward()
        out.append((np.array(x.grad.tolist()), np.array(y.grad.tolist())))
    for g_dev, g_ref in zip(out[1], out[0]):
        np.testing.assert_allclose(g_dev, g_ref, rtol=2e-5, atol=1e-6)
