"""f16 working copies of parameters that share a flat buffer are cast in one dispatch:
the values are NumPy's f16 rounding of the masters, and the gradients that reach the f32
masters equal those of one recorded cast per parameter, bit for bit (on WebGPU)."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.base.dtypes import f16, f32
from scellis.catalog.module_precision import cast_together
from scellis.catalog.optim.flat import flatten_parameters

pytestmark = [pytest.mark.webgpu]

SHAPES = [(6, 5), (5,), (5, 3), (3,)]


def _masters(gpu, rng):
    """Random f32 parameters as views of one flat buffer (as an optimizer holds them)."""
    raw = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    return raw, flatten_parameters([sc.tensor(r, device=gpu) for r in raw])


def _loss(copies, x, coef):
    """A small two-layer forward in f16 (matmul, bias add), its loss in f32."""
    w1, b1, w2, b2 = copies
    h = (x @ w1 + b1).relu()
    return ((h @ w2 + b2).cast(f32) * coef).sum()


def _grads(gpu, rng_seed: int, together: bool):
    rng = np.random.default_rng(rng_seed)
    raw, params = _masters(gpu, rng)
    x = sc.tensor(rng.standard_normal((4, 6)).astype(np.float16), device=gpu)
    coef = sc.tensor(rng.standard_normal((4, 3)).astype(np.float32), device=gpu)
    ran = []
    inner = gpu.run

    def spy(op, inputs, outputs, attrs):
        ran.append((op, outputs[0].dtype.name if outputs else ""))
        return inner(op, inputs, outputs, attrs)

    gpu.run = spy
    try:
        copies = cast_together(params, f16) if together else [p.cast(f16) for p in params]
        casts = sum(op == "cast" for op, _ in ran)
        values = [c.detach().numpy() for c in copies]
        _loss(copies, x, coef).backward()
    finally:
        del gpu.run
    return raw, values, [p.grad.numpy() for p in params], [p.grad.dtype for p in params], casts


def test_one_cast_for_a_flat_group_with_the_same_values_and_gradients(gpu):
    raw, values, grads, dtypes, casts = _grads(gpu, 3, together=True)
    _, values_each, grads_each, _, casts_each = _grads(gpu, 3, together=False)
    assert (casts, casts_each) == (1, len(SHAPES))
    for r, v in zip(raw, values):
        assert v.dtype == np.float16
        np.testing.assert_array_equal(v, r.astype(np.float16))
    assert all(d == f32 for d in dtypes)  # the masters' gradients stay f32
    for g, ge in zip(grads, grads_each):
        assert np.any(g != 0)
        np.testing.assert_array_equal(g, ge)


def test_parameters_of_separate_buffers_or_a_sparse_span_cast_each(gpu):
    rng = np.random.default_rng(5)
    _, params = _masters(gpu, rng)
    alone = sc.tensor(rng.standard_normal((4,)).astype(np.float32), device=gpu)
    # the first and last of a flat group cover a span over twice their size: cast apart
    picked = [params[1], params[3], alone]
    copies = cast_together(picked, f16)
    assert len({id(c._buf) for c in copies}) == len(picked)
    for p, c in zip(picked, copies):
        np.testing.assert_array_equal(c.detach().numpy(), p.detach().numpy().astype(np.float16))
