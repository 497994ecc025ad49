"""The adapter's own exp and log (``KernelChoice.native_math``, the fast tier): taken
only under that choice, kept apart from the polynomial kernels in the launch cache,
accurate against float64 on random inputs, and the polynomial's answers at the ends
of the range (underflow to 0, overflow to infinity) kept."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.kernel_choice import FIXED, KernelChoice, choosing
from scellis.devices.webgpu import WebGPUBackend
from scellis.devices.webgpu.kernels.mathlib import helpers_for
from scellis.train.determinism import KERNELS

pytestmark = pytest.mark.webgpu

NATIVE = KernelChoice(native_math=True)
BUILTIN_EXP = "return exp(x);"
POLYNOMIAL_EXP = "round(x * 1.4426950408889634)"


def test_only_the_fast_tier_asks_for_the_adapters_math():
    assert KERNELS["fast"].native_math
    assert not KERNELS["prod"].native_math and not KERNELS["debug"].native_math
    assert not KERNELS["fast"].for_inference().native_math


def test_the_helpers_swap_exp_and_log_and_what_calls_them_follows():
    native = "\n".join(helpers_for("sc_tanh( sc_log1p(", native=True))
    plain = "\n".join(helpers_for("sc_tanh( sc_log1p("))
    assert BUILTIN_EXP in native and POLYNOMIAL_EXP not in native
    assert "return log(x);" in native
    assert POLYNOMIAL_EXP in plain and BUILTIN_EXP not in plain
    assert native.count("fn sc_exp(") == 1  # tanh's dependency, once


def _texts(dev, monkeypatch) -> list[str]:
    """The WGSL of every pipeline ``dev`` compiles from now on."""
    seen = []
    make = dev.pipeline

    def spy(code):
        seen.append(code)
        return make(code)

    monkeypatch.setattr(dev, "pipeline", spy)
    return seen


def test_the_choice_reaches_the_kernel_and_the_launch_cache_keeps_them_apart(gpu, monkeypatch):
    dev = WebGPUBackend(gpu=gpu.gpu)
    texts = _texts(dev, monkeypatch)
    x = sc.tensor(np.random.default_rng(3).uniform(-5, 5, 257).astype(np.float32), device=dev)
    with choosing(FIXED):
        x.exp().numpy()
    with choosing(NATIVE):
        x.exp().numpy()
    with choosing(FIXED):
        x.exp().numpy()  # the kept polynomial launch again, not the native one
    exp_texts = [t for t in texts if "fn sc_exp(" in t]
    assert len(exp_texts) == 2, "one compile each way; the third call reuses the first"
    assert POLYNOMIAL_EXP in exp_texts[0] and BUILTIN_EXP in exp_texts[1]


# f(x) in float64 for the elementwise ops whose kernels call sc_exp or sc_log
FUNCTIONS = {
    "exp": (lambda t: t.exp(), np.exp, (-80.0, 80.0)),
    "log": (lambda t: t.log(), np.log, (1e-30, 1e30)),
    "sigmoid": (lambda t: t.sigmoid(), lambda v: 1.0 / (1.0 + np.exp(-v)), (-30.0, 30.0)),
    "tanh": (lambda t: t.tanh(), np.tanh, (-12.0, 12.0)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_native_results_stay_close_to_float64(gpu, name):
    """Random inputs over most of each function's range (log-uniform for log): the
    builtins' accuracy is the driver's, so the bound is prod's dense tolerance (1e-4
    relative), far above the few ulp any driver is allowed."""
    op, exact, (lo, hi) = FUNCTIONS[name]
    rng = np.random.default_rng(11)
    if name == "log":
        v = np.exp(rng.uniform(np.log(lo), np.log(hi), 4099))
    else:
        v = rng.uniform(lo, hi, 4099)
    v = v.astype(np.float32)
    with choosing(NATIVE):
        got = op(sc.tensor(v, device=gpu)).numpy().astype(np.float64)
    want = exact(v.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-30)


def test_the_ends_of_exp_keep_the_polynomials_answers(gpu):
    edges = np.array([-np.inf, -1e4, -104.0, 89.0, 1e4, np.inf, 0.0, -0.0], np.float32)
    with choosing(NATIVE):
        got = sc.tensor(edges, device=gpu).exp().numpy()
    with choosing(FIXED):
        want = sc.tensor(edges, device=gpu).exp().numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [0, 0, 0, np.inf, np.inf, np.inf, 1, 1])
