"""Reference kernels give IEEE answers without NumPy RuntimeWarnings where those answers
are expected: sigmoid's exp overflow (the exact 0), log(0) = -inf and 0 * inf = nan in
pow's gradient at a zero base (masked to torch's 0 afterwards).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import scellis as sc


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_sigmoid_and_softplus_far_left(dtype):
    x = sc.tensor(np.array([-1000.0, -100.0, 0.0, 100.0]), dtype=dtype, requires_grad=True)
    assert x.sigmoid().tolist()[:2] == [0.0, pytest.approx(np.exp(-100.0), rel=1e-6)]
    assert x.silu().tolist()[0] == 0.0
    x.softplus().sum().backward()  # the gradient is sigmoid(x)
    assert x.grad.tolist()[0] == 0.0


def test_log_of_zero_is_minus_inf():
    assert sc.tensor([0.0, 1.0]).log().tolist() == [-np.inf, 0.0]


def test_pow_gradient_at_a_zero_base():
    a = sc.tensor([0.0, 0.5, 2.0], requires_grad=True)
    b = sc.tensor([2.0, 2.0, 3.0], requires_grad=True)
    (a**b).sum().backward()
    assert a.grad.tolist() == [0.0, 1.0, 12.0]
    assert b.grad.tolist()[0] == 0.0  # d/db 0**b: torch's 0, not 0 * log(0) = nan


def test_zero_times_inf_is_nan():
    got = (sc.tensor([0.0, 2.0]) * sc.tensor([np.inf, np.inf])).tolist()
    assert np.isnan(got[0]) and got[1] == np.inf
