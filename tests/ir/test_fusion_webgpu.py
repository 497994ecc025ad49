"""Fused inference forward on WebGPU (lavapipe) against the unfused path and the reference."""

from __future__ import annotations

import numpy as np
import pytest
from irutil import MODELS, example, random_inputs, random_tensor

from scellis.autograd import no_grad
from scellis.base.rng import Generator
from scellis.devices import get_device
from scellis.devices.webgpu import WebGPUBackend
from scellis.ir.compiled import compile_forward
from scellis.ir.graph import op_graph
from scellis.ir.kernels import lower
from scellis.ir.limits import of_backend
from scellis.ir.trace import run_training, trace
from scellis.model.build import RecordModel

pytestmark = pytest.mark.webgpu
BATCH = 2


def _model(record, device):
    return RecordModel(record, device=device, gen=Generator(0, "init")).eval()


@pytest.mark.parametrize("model_name", MODELS)
def test_fused_forward_equals_unfused_and_reference(gpu, model_name):
    record = example(model_name)
    m = _model(record, gpu)
    ref_model = _model(record, get_device("reference"))
    fused = compile_forward(record, of_backend(gpu), batch=BATCH)
    plain = compile_forward(record, of_backend(gpu), batch=BATCH, fused=False)
    assert fused.dispatches < plain.dispatches
    assert any(k.fused == "matmul+epilogue" for k in fused.kernels.kernels)
    for seed in (0, 1):
        x = random_inputs(record, BATCH, gpu, seed)
        xr = random_inputs(record, BATCH, "reference", seed)
        with no_grad():
            eager = np.array(m(*x).tolist())
            before = gpu.stats["dispatches"]
            got = np.array(fused.run(m, *x).tolist())
            ran = gpu.stats["dispatches"] - before
            unfused = np.array(plain.run(m, *x).tolist())
            want = np.array(ref_model(*xr).tolist())
        assert ran == fused.dispatches  # the kernel graph is what ran
        assert got.shape == eager.shape == want.shape
        scale = np.abs(want).max()
        # fused keeps intermediates in f32 registers: within a few f32 roundings
        assert np.abs(got - eager).max() <= 1e-5 * scale
        assert np.abs(unfused - eager).max() == 0.0  # unfused replay is the eager kernels
        assert np.abs(got - want).max() <= 1e-4 * scale


@pytest.mark.parametrize("model_name", MODELS)
def test_kernel_rung_wgsl_is_what_the_backend_compiles(model_name):
    record = example(model_name)
    dev = WebGPUBackend()  # a fresh pipeline cache: what this forward compiles
    m = _model(record, dev)
    (x,) = random_inputs(record, BATCH, dev)
    before = set(dev._pipelines)
    with no_grad():
        d0 = dev.stats["dispatches"]
        m(x).tolist()
        eager_dispatches = dev.stats["dispatches"] - d0
    compiled = set(dev._pipelines)
    kg = lower(op_graph(trace(record, mode="inference", batch=BATCH)), of_backend(dev))
    texts = set(kg.pipelines().values())
    assert compiled - before <= texts  # every pipeline the forward compiled is in the rung
    assert texts <= compiled  # and every pipeline in the rung was compiled
    consts = sum(len(k.launches) for k in kg.kernels if k.ops[0].phase == "const")
    assert kg.dispatches - consts == eager_dispatches


def test_training_step_kernels_are_what_eager_training_compiles():
    # one eager training step on a fresh device: from its first input on, every pipeline
    # it compiles and every dispatch it makes is the kernel rung's (backward included)
    record = example("lstm_forecaster")
    dev = WebGPUBackend()
    mark = {}
    rng = np.random.default_rng(0)

    def feed(d, shape, dtype):
        if not mark:
            mark.update(pipelines=set(d._pipelines), dispatches=d.stats["dispatches"])
        return random_tensor(list(shape), dtype.name, d, rng)

    run_training(record, dev, batch=BATCH, steps=1, feed=feed)
    new = set(dev._pipelines) - mark["pipelines"]
    kg = lower(op_graph(trace(record, mode="training", batch=BATCH, steps=1)), of_backend(dev))
    texts = set(kg.pipelines().values())
    assert new <= texts and texts <= set(dev._pipelines)
    consts = sum(len(k.launches) for k in kg.kernels if k.ops[0].phase == "const")
    assert dev.stats["dispatches"] - mark["dispatches"] == kg.dispatches - consts
