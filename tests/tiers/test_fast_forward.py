"""The fast tier's fused inference forward where users reach it: a trained run's
evaluate, predict and forecast, a language model's generation, and a run's validation
passes, each within the declared tolerance of the eager forward (WebGPU, lavapipe)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from scellis.base.rng import Generator
from scellis.ir.compiled import FusedForward, forward_for
from scellis.ir.record import load_record
from scellis.model.build import RecordModel
from scellis.run.generate import stream
from scellis.run.reference import open_run
from scellis.run.use import evaluate_run, predict_run
from scellis.train.determinism import FAST_FORWARD_TOLERANCE, resolve_tier
from webapp.test_use_api import SERIES, train

pytestmark = pytest.mark.webgpu
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RTOL = FAST_FORWARD_TOLERANCE["rtol"]


@pytest.fixture(scope="module")
def yearly(tmp_path_factory):
    return train(tmp_path_factory.mktemp("fast"), SERIES.replace("hidden_size: 4", "hidden_size: 8")
                 .replace("in_features: 4", "in_features: 8"))  # fmt: skip


@pytest.fixture
def fused_calls(monkeypatch):
    """How many forwards ran compiled and fused."""
    calls = []
    real = FusedForward.__call__

    def counted(self, *inputs):
        out = real(self, *inputs)
        assert self.reason == ""  # compiled and fused, not run eagerly instead
        calls.append(inputs[0].shape)
        return out

    monkeypatch.setattr(FusedForward, "__call__", counted)
    return calls


def test_only_fast_fuses():
    rec = {"determinism_tier": "debug", "blocks": {}}
    assert forward_for(rec, "m") == "m" and forward_for(rec, "m", "prod") == "m"
    assert isinstance(forward_for(rec, "m", "fast"), FusedForward)
    assert forward_for({**rec, "precision": "mixed_f16"}, "m", "fast") == "m"
    assert resolve_tier("fast").effective == "fast" and resolve_tier("fast").note == ""


def test_predict_and_evaluate_fused_on_fast(gpu, yearly, fused_calls):
    store, rid = yearly
    run = open_run(store, rid)
    eager = asyncio.run(predict_run(run, device=gpu, horizon=3, batch=64, tier="debug"))
    assert fused_calls == []
    fused = asyncio.run(predict_run(run, device=gpu, horizon=3, batch=64, tier="fast"))
    assert len(fused_calls) >= 4  # the windows in batches of 64, then each forecast step
    a = np.array([r["predicted"] for r in fused])
    b = np.array([r["predicted"] for r in eager])
    assert a.shape == b.shape and [r["date"] for r in fused] == [r["date"] for r in eager]
    assert np.abs(a - b).max() <= RTOL * np.abs(b).max()
    before = len(fused_calls)
    ev_fast = asyncio.run(evaluate_run(run, device=gpu, tier="fast"))
    ev_eager = asyncio.run(evaluate_run(run, device=gpu, tier="debug"))
    assert len(fused_calls) > before
    for k, v in ev_eager["metrics"].items():
        assert abs(ev_fast["metrics"][k] - v) <= RTOL * abs(v) + 1e-6, k


def test_generation_runs_full_windows_fused(gpu, fused_calls):
    record = load_record(str(EXAMPLES / "char_transformer.sml"))
    model = RecordModel(record, device=gpu, gen=Generator(3, "init"))
    prompt = [int(i) for i in np.random.default_rng(1).integers(0, 88, size=40)]

    async def logits(forward):
        return [s.logits[0] async for s in stream(model, prompt, max_new=3, temperature=0.0,
                                                  context=32, keep_logits=True,
                                                  forward=forward)]  # fmt: skip

    eager = asyncio.run(logits(None))
    fused = asyncio.run(logits(forward_for(record, model, "fast")))
    assert len(fused_calls) == 3
    a, b = np.array(fused), np.array(eager)
    assert np.abs(a - b).max() <= RTOL * np.abs(b).max()
