"""LayerNorm, RMSNorm and Dropout against torch.nn (forward and every gradient)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from blockutil import arr, compare, gen, rng_for

import scellis as sc
from scellis.base.rng import Generator
from scellis.catalog import blocks as B


def _perturb(m, rng):
    """Move the ones/zeros init off its start, so the affine gradients are exercised."""
    for name, p in list(m.named_parameters()):
        m.set_parameter(
            name,
            sc.tensor(arr(p) + rng.standard_normal(p.shape).astype(np.float32) * 0.3, dtype="f32"),
        )


def test_layer_norm_init_and_match():
    rng = rng_for("layer_norm")
    m = B.LayerNorm(B.LayerNormConfig(6), gen=gen())
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert np.all(arr(m.weight) == 1) and np.all(arr(m.bias) == 0)
    _perturb(m, rng)
    compare(m, torch.nn.LayerNorm(6), [rng.standard_normal((2, 3, 6)) * 2 + 1], name="ln")


def test_layer_norm_without_bias_or_affine():
    rng = rng_for("layer_norm_plain")
    m = B.LayerNorm(B.LayerNormConfig(5, eps=1e-3, bias=False), gen=gen())
    _perturb(m, rng)
    compare(
        m,
        torch.nn.LayerNorm(5, eps=1e-3, bias=False),
        [rng.standard_normal((4, 5))],
        name="ln_nobias",
    )
    m = B.LayerNorm(B.LayerNormConfig(5, elementwise_affine=False), gen=gen())
    assert list(m.named_parameters()) == []
    compare(
        m,
        torch.nn.LayerNorm(5, elementwise_affine=False),
        [rng.standard_normal((4, 5))],
        name="ln_plain",
    )


@pytest.mark.parametrize("eps", [None, 1e-4])
def test_rms_norm_matches_torch(eps):
    rng = rng_for(f"rms_{eps}")
    m = B.RMSNorm(B.RMSNormConfig(6, eps=eps), gen=gen())
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    assert np.all(arr(m.weight) == 1)
    _perturb(m, rng)
    compare(m, torch.nn.RMSNorm(6, eps=eps), [rng.standard_normal((2, 3, 6))], name="rms")


def test_dropout_is_identity_in_eval_and_philox_in_training():
    rng = rng_for("dropout")
    x = sc.tensor(rng.standard_normal((8, 64)).astype(np.float32) + 3.0)
    m = B.Dropout(B.DropoutConfig(0.25))
    assert list(m.named_parameters()) == []
    np.testing.assert_array_equal(arr(m.eval()(x)), arr(x))
    y = arr(m.train()(x))
    kept = y != 0
    assert 0.6 < kept.mean() < 0.9
    np.testing.assert_allclose(y[kept], arr(x)[kept] / 0.75, rtol=1e-6)
    # the same draw of the same stream gives the same mask as the functional form
    g = sc.generator("dropout")
    state = g.state()
    a = arr(m(x))
    g2 = Generator.from_state(state)
    b = arr(sc.functional.dropout(x, 0.25, True, g2))
    np.testing.assert_array_equal(a, b)


def test_dropout_gradient_follows_the_mask():
    x = sc.tensor(np.ones((4, 16), np.float32), requires_grad=True)
    y = B.Dropout(B.DropoutConfig(0.5))(x)
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), arr(y))
