"""The prod tier's declared tolerance, checked: the same records trained a few steps on
the reference device and on WebGPU (lavapipe) agree within their op family's bound, and
a kernel that computes slightly wrong (a matmul whose sums start at 1e-5) is caught."""

from __future__ import annotations

import asyncio
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


def _trained(name: str, device, key=None):
    """(record, outcome) of ``name`` trained STEPS steps under prod on ``device``."""
    key = key or (name, getattr(device, "name", device))
    if key not in _CACHE:
        record = load_record(str(EXAMPLES / f"{name}.sml"))
        ds = load_dataset(record, EXAMPLES)
        _CACHE[key] = record, asyncio.run(train_steps(record, device, "prod", STEPS, dataset=ds))
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


@pytest.mark.parametrize("name", ["lstm_forecaster", "char_transformer"])
def test_prod_webgpu_within_the_declared_bound(gpu, name):
    record, want = _trained(name, "reference")
    _, got = _trained(name, gpu)
    assert len(got.losses) == len(want.losses) == STEPS
    assert got.weights.keys() == want.weights.keys()
    assert _problems(got, want, record) == []


def test_a_kernel_that_leaves_the_bound_is_caught(monkeypatch):
    dev = WebGPUBackend()  # its own pipeline cache: every kernel compiles patched
    real = dev.pipeline

    patched = []

    def off_by_a_little(code: str):
        # the tiled matmuls' accumulators start at 1e-5 instead of 0
        bad = code.replace("= vec4<f32>(0.0);", "= vec4<f32>(1e-5);")
        patched.append(bad != code)
        return real(bad)

    monkeypatch.setattr(dev, "pipeline", off_by_a_little)
    record, want = _trained("lstm_forecaster", "reference")
    _, got = _trained("lstm_forecaster", dev, key="perturbed")
    assert any(patched)
    problems = _problems(got, want, record)
    assert problems, "a matmul off by 1e-5 per element went unnoticed"
