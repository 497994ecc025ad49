"""The reference device's Philox kernels against the pure-Python Philox, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis import functional as F
from scellis.devices import get_device
from scellis.devices.reference import kernels
from scellis.rng import Generator, bernoulli, raw_u32, stream_key, uniform
from scellis.runtime.dispatch import apply

KEYS = [(0, 0), (0xFFFFFFFF, 0xFFFFFFFF), stream_key(42, "dropout"), (0xA4093822, 0x299F31D0)]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("n, draw, step", [(1, 0, 0), (7, 3, 1), (129, 0xFFFFFFFF, 2**40 + 5)])
def test_philox_np_equals_raw_u32(key, n, draw, step):
    got = kernels.philox_np(n, key, draw, step)
    assert got.dtype == np.uint32
    assert got.tolist() == raw_u32(key, n, draw, step)


def test_philox_np_first_block_is_the_zero_vector():
    assert kernels.philox_np(4, (0, 0), 0, 0).tolist() == [
        0x6627E8D5,
        0xE169C58D,
        0xBC57AC4C,
        0x9B00DBD8,
    ]


def test_rand_equals_python_uniform():
    g = Generator(123, "augment")
    first = sc.rand((3, 43), gen=g)
    second = sc.rand((3, 43), gen=g)
    key = stream_key(123, "augment")
    assert first.dtype == sc.f32
    want0 = np.array(uniform(key, 129, 0, 0), dtype=np.float32).reshape(3, 43)
    want1 = np.array(uniform(key, 129, 1, 0), dtype=np.float32).reshape(3, 43)
    np.testing.assert_array_equal(np.array(first.tolist(), np.float32), want0)
    np.testing.assert_array_equal(np.array(second.tolist(), np.float32), want1)
    assert not np.array_equal(want0, want1)


def _mask_op(shape, keep, key, draw, step):
    return apply(
        "bernoulli",
        (),
        device=get_device("reference"),
        shape=shape,
        key=key,
        draw=draw,
        step=step,
        keep=keep,
    )


def test_bernoulli_kernel_equals_python():
    key = stream_key(8, "dropout")
    got = _mask_op((5, 26), 0.35, key, 2, 7).tolist()
    want = bernoulli(key, 130, 0.35, 2, 7)
    assert sum(want) not in (0, 130)
    assert [v for row in got for v in row] == want


def test_bernoulli_kernel_uses_the_integer_threshold(monkeypatch):
    # floor(0.3 * 2**24): a float compare keeps it (f32(0.3) rounds up), the integer drops it
    m = 5033164
    assert np.float32(m * 2.0**-24) < np.float32(0.3)
    crafted = np.array([(m - 1) << 8, m << 8, (m << 8) | 0xFF, (m + 1) << 8], np.uint32)
    monkeypatch.setattr(kernels, "philox_np", lambda n, key, draw, step: crafted[:n])
    assert _mask_op((4,), 0.3, (1, 2), 0, 0).tolist() == [True, False, False, False]


def test_dropout_grad_is_mask_times_scale():
    p = 0.4
    x = sc.tensor(np.random.default_rng(0).standard_normal((7, 19)), requires_grad=True)
    y = F.dropout(x, p, gen=Generator(3, "dropout"))
    y.sum().backward()
    keep = np.array(bernoulli(stream_key(3, "dropout"), 133, 1 - p, 0, 0)).reshape(7, 19)
    assert 0 < keep.sum() < keep.size
    scale = 1.0 / (1.0 - p)
    np.testing.assert_array_equal(np.array(x.grad.tolist()), keep * scale)
    np.testing.assert_array_equal(np.array(y.tolist()), np.array(x.tolist()) * keep * scale)


def test_dropout_draws_advance_and_identity_cases():
    g = Generator(4, "dropout")
    x = sc.ones((64,), dtype="f64")
    a, b = F.dropout(x, 0.5, gen=g).tolist(), F.dropout(x, 0.5, gen=g).tolist()
    assert a != b and g.draw == 2
    assert F.dropout(x, 0.5, training=False, gen=g) is x
    assert F.dropout(x, 0.0, gen=g) is x
    with pytest.raises(sc.ScellisError):
        F.dropout(x, 1.0)
