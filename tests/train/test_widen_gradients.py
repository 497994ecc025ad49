"""A mixed_f16 step's gradients: the masters' f16 gradients widened to f32 together
(one gather that widens as it copies), laid end to end so that the loss scale, the
clipping and the finite flag each run once over them instead of once per parameter;
values checked against NumPy and torch's clip_grad_norm_, dispatches counted on WebGPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import scellis as sc
from scellis.base.dtypes import f16, f32
from scellis.base.errors import DTypeError
from scellis.base.rng import Generator
from scellis.catalog.clip import clip_grad_norm_, scale_gradients
from scellis.catalog.optim.flat import flat_view, flatten_parameters
from scellis.devices import get_device
from scellis.ir.graph import op_graph
from scellis.ir.record import load_record
from scellis.ir.trace import trace
from scellis.model.build import RecordModel
from scellis.runtime.creation import zeros
from scellis.runtime.dispatch import apply_inplace
from scellis.train.precision import widen_gradients

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SHAPES = [(6, 5), (5,), (5, 3), (3,)]


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def _params_with_f16_grads(gpu, rng):
    params = flatten_parameters(
        [sc.tensor(rng.standard_normal(s).astype(np.float32), device=gpu) for s in SHAPES]
    )
    grads = [rng.standard_normal(s).astype(np.float16) for s in SHAPES]
    for p, g in zip(params, grads):
        p.grad = sc.tensor(g, device=gpu)
    return params, grads


def _counting(gpu):
    ran = []
    inner = gpu.run

    def spy(op, inputs, outputs, attrs):
        ran.append(op)
        return inner(op, inputs, outputs, attrs)

    gpu.run = spy
    return ran


@pytest.mark.webgpu
def test_f16_gradients_widen_together_into_one_flat_range(gpu, rng):
    params, grads = _params_with_f16_grads(gpu, rng)
    ran = _counting(gpu)
    try:
        widen_gradients(params)
    finally:
        del gpu.run
    assert sorted(ran) == ["flat_gather", "full"]  # the cast folded into the gather
    assert flat_view([p.grad for p in params]) is not None
    for p, g in zip(params, grads):
        assert p.grad.dtype == f32
        np.testing.assert_array_equal(p.grad.numpy(), g.astype(np.float32))


@pytest.mark.webgpu
def test_the_gather_widens_into_f32_only(gpu, rng):
    _, grads = _params_with_f16_grads(gpu, rng)
    parts = tuple(sc.tensor(g, device=gpu) for g in grads)
    with pytest.raises(DTypeError):
        apply_inplace("flat_gather", parts, (zeros((sum(g.size for g in grads),), f16, gpu),))


@pytest.mark.webgpu
def test_flat_gradients_scale_and_clip_in_one_pass_as_torch_does(gpu, rng):
    params, grads = _params_with_f16_grads(gpu, rng)
    widen_gradients(params)
    ran = _counting(gpu)
    try:
        scale_gradients(params, sc.tensor(np.float32(0.25), device=gpu))
        norm = clip_grad_norm_(params, 1.0)
    finally:
        del gpu.run
    assert "flat_gather" not in ran  # the norm reads the flat range where it lies
    assert ran.count("mul") <= 3  # the scale, the squares, the clip: not one per parameter
    want = [torch.tensor(g.astype(np.float32) * 0.25, requires_grad=False) for g in grads]
    leaves = [torch.zeros(s, requires_grad=True) for s in SHAPES]
    for leaf, w in zip(leaves, want):
        leaf.grad = w.clone()
    want_norm = torch.nn.utils.clip_grad_norm_(leaves, 1.0)
    np.testing.assert_allclose(norm.numpy(), want_norm.numpy(), rtol=1e-6)
    for p, leaf in zip(params, leaves):
        np.testing.assert_allclose(p.grad.numpy(), leaf.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_a_mixed_step_casts_a_handful_of_times_not_once_per_parameter():
    # the planner traces the loop's own step on the recording device: count its casts
    record = load_record(str(EXAMPLES / "char_transformer.sml"))
    model = RecordModel(record, device=get_device("null"), gen=Generator(0, "init"))
    assert len(list(model.parameters())) > 20
    tr = trace(record, mode="training", precision="mixed_f16", supports_f16=True)
    casts = [n for n in op_graph(tr).nodes if n.op == "cast"]
    assert len(casts) <= 10, [(n.phase, n.ins[0].dtype.name, n.ins[0].shape) for n in casts]
