"""The prod tier's declared tolerance, checked: the same records trained a few steps on
the reference device and on WebGPU (lavapipe) under prod and fast (their reordered and
fused kernels: one-pass sums, the fused dense layer, the unfolded conv, the multi-tensor
update) agree within their op family's bound, and a kernel that computes slightly wrong
(a matmul whose sums start at 1e-5, a one-pass sum, the fused dense backward, the conv
taps' fold or the multi-tensor update off by as little) is caught."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from scellis.devices.webgpu import WebGPUBackend
from scellis.ir.record import load_record
from scellis.run.conformance import load_dataset, train_steps
from scellis.train.determinism import PROD_TOLERANCE, family_of, tolerance_for, within

pytestmark = pytest.mark.webgpu
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STEPS = 5
_CACHE: dict = {}


def _trained(name: str, device, key=None, tier="prod"):
    """(record, outcome) of ``name`` trained STEPS steps under ``tier`` on ``device``."""
    key = key or (name, getattr(device, "name", device), tier)
    if key not in _CACHE:
        record = load_record(str(EXAMPLES / f"{name}.sml"))
        ds = load_dataset(record, EXAMPLES)
        _CACHE[key] = record, asyncio.run(train_steps(record, device, tier, STEPS, dataset=ds))
    return _CACHE[key]


def _problems(got, want, record) -> list[str]:
    tol = tolerance_for(record)
    return within({"losses": got.losses}, {"losses": want.losses}, tol) + within(
        got.weights, want.weights, tol, shared_scale=True
    )


def test_families_of_the_examples():
    assert family_of("nn/lstm") == "recurrent" and family_of("nn/transformer") == "attention"
    assert family_of("nn/layer_norm") == "norm" and family_of("nn/linear") == "dense"
    rec = load_record(str(EXAMPLES / "char_transformer.sml"))
    tol = tolerance_for(rec)
    assert tol["family"] == "attention"
    assert tol["rtol"] == PROD_TOLERANCE["f32"]["attention"]["rtol"]
    assert tolerance_for({**rec, "precision": "mixed_f16"})["rtol"] > tol["rtol"]


@pytest.mark.parametrize(
    "name,tier",
    [
        ("lstm_forecaster", "prod"),
        ("lstm_forecaster", "fast"),
        ("char_transformer", "prod"),
        ("char_transformer", "fast"),
        ("tcn_forecaster", "prod"),
        ("tcn_forecaster", "fast"),
    ],
)
def test_webgpu_within_the_declared_bound(gpu, name, tier):
    record, want = _trained(name, "reference")
    _, got = _trained(name, gpu, tier=tier)
    assert len(got.losses) == len(want.losses) == STEPS
    assert got.weights.keys() == want.weights.keys()
    assert _problems(got, want, record) == []


def _as_gpu() -> WebGPUBackend:
    """A backend on lavapipe whose adapter says it is a discrete GPU: it takes the
    kernels a real GPU takes (split-K matmuls)."""
    dev = WebGPUBackend()
    dev.info = dataclasses.replace(dev.info, adapter_type="DiscreteGPU", name="as a GPU",
                                   vendor="", description="")  # fmt: skip
    return dev


def test_split_k_training_within_the_declared_bound():
    # lavapipe's adapter is software, where prod keeps matmuls whole; flagged as a GPU it
    # takes the split-K form of the tall-K weight gradients, as a real GPU does
    dev = _as_gpu()
    split, real = [], dev.encode

    def encode(op, ins, outs, attrs):
        launches = real(op, ins, outs, attrs)
        split.append(op == "matmul" and len(launches) > 1)
        return launches

    dev.encode = encode
    record, want = _trained("lstm_forecaster", "reference")
    _, got = _trained("lstm_forecaster", dev, key="split-k")
    assert any(split), "no matmul was split"
    assert _problems(got, want, record) == []


# (record, tier, the WGSL a slightly wrong kernel has, what it has instead)
PERTURBED = {
    # the tiled matmuls' accumulators start at 1e-5 instead of 0
    "matmul": ("lstm_forecaster", "prod", "= vec4<f32>(0.0);", "= vec4<f32>(1e-5);"),
    # the one-pass column sum (a bias gradient) starts at 1e-5
    "one-pass sum": ("lstm_forecaster", "prod", "var acc = 0.0;\n  if (o < M)",
                     "var acc = 1e-5;\n  if (o < M)"),
    # the fused dense backward's pre-activation gradient is 1e-5 too large
    "dense backward": ("char_transformer", "fast", "st_o(oo + e, d);", "st_o(oo + e, d + 1e-5);"),
    # the multi-tensor update reads every gradient 1e-5 too large
    "multi-tensor update": ("char_transformer", "fast", "let g = (graw * clip) * gsign",
                            "let g = (graw * clip + 1e-5) * gsign"),
    # (a gradient norm off by a constant factor is not here: Adam's update is blind to a
    # gradient scale shared by every step; tests/tiers/test_fused_step.py checks it
    # against NumPy instead)
    # the fused cross-entropy's gradient basis 1e-4 too large in every class
    "cross-entropy": ("char_transformer", "fast", "lse) - hot));", "lse) - hot + 1e-4));"),
    # the whole-sequence LSTM kernel's cell state gains 1e-5 at every step
    "whole-sequence LSTM": ("lstm_forecaster", "fast", "c = fg * c + ig * gg;",
                            "c = fg * c + ig * gg + 1e-5;"),
    # the fused tally counts each kept step 0.1% over one (the logged mean loss drops)
    "step tally": ("lstm_forecaster", "fast", "ld_good(eg) + ok);", "ld_good(eg) + ok * 1.001);"),
}  # fmt: skip


@pytest.mark.parametrize("kernel", list(PERTURBED))
def test_a_kernel_that_leaves_the_bound_is_caught(monkeypatch, kernel):
    name, tier, good, bad = PERTURBED[kernel]
    dev = WebGPUBackend()  # its own pipeline cache: every kernel compiles patched
    real = dev.pipeline
    patched = []

    def off_by_a_little(code: str):
        wrong = code.replace(good, bad)
        patched.append(wrong != code)
        return real(wrong)

    monkeypatch.setattr(dev, "pipeline", off_by_a_little)
    record, want = _trained(name, "reference")
    _, got = _trained(name, dev, key=("perturbed", kernel), tier=tier)
    assert any(patched), f"no {kernel} kernel ran"
    problems = _problems(got, want, record)
    assert problems, f"a {kernel} off by 1e-5 went unnoticed"
