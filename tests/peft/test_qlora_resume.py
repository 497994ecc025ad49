"""A QLoRA run checkpointed half way and resumed equals the uninterrupted run bit for bit
(reference device, ``debug`` tier): the checkpoint holds the base's codes and scales."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from peftutil import arr, char_model, rng_for

import scellis as sc
from scellis.catalog import peft
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import AdamW
from scellis.store.objects import ObjectStore
from scellis.train import Batches, TrainState, run
from scellis.train import checkpoint as ckpt

SECTION = {
    "adapters": [{"block_id": "peft/lora", "target_modules": ["q", "v"], "rank": 2}],
    "quantize_base": "nf4",
}
STEPS, HALF, SEED = 6, 3, 5


def _setup(quantize_base="nf4"):
    model = char_model(seed=1, layers=1)
    peft.apply_finetune(model, {**SECTION, "quantize_base": quantize_base}, seed=SEED)
    rng = rng_for("qlora-resume")
    ids = rng.integers(0, 11, (16, 7))
    data = Batches(ids[:, :-1].tolist(), ids[:, 1:].tolist(), 4)
    opt = AdamW(model, lr=0.03, weight_decay=0.0)
    return model, TrainState(model, opt, seed=SEED), data


def _train(ts, data, max_steps, events):
    return run(
        ts.model, CrossEntropyLoss(), ts.optimizer, data, epochs=100, max_steps=max_steps,
        determinism_tier="debug", seed=ts.seed, state=ts, log_every=1, on_event=events.append,
    )  # fmt: skip


def _losses(events):
    return [e["loss"] for e in events if e["kind"] == "log"]


@pytest.mark.parametrize("quantize_base", ["nf4", {"format": "nf4", "double_quant": True}])
def test_a_quantised_run_resumes_exactly(tmp_path, quantize_base):
    model, ts, data = _setup(quantize_base)
    full: list = []
    _train(ts, data, STEPS, full)
    assert _losses(full)[-1] < _losses(full)[0]
    want = {k: arr(v) for k, v in model.state_dict().items()}
    assert any(k.endswith("weight_codes") for k in want)

    objects = ObjectStore(tmp_path / "store")
    _, ts1, data1 = _setup(quantize_base)
    first: list = []
    _train(ts1, data1, HALF, first)
    h, _ = asyncio.run(ckpt.save(ts1, objects, record=None, dataset=None, tier="debug"))
    model2, ts2, data2 = _setup(quantize_base)
    # spoil the fresh model's codes: only the checkpoint can give them back
    codes = next(m for _, m in model2.named_modules() if getattr(m, "quant", None))
    with sc.no_grad():
        for name in ("weight_codes", "weight_scale_codes"):
            if name in codes._params:
                t = codes._params[name]
                t.copy_(sc.zeros(t.shape, dtype="u32"))
    ckpt.load(ts2, objects, h)
    second: list = []
    _train(ts2, data2, STEPS, second)
    assert _losses(first + second) == _losses(full)  # bitwise: the same floats
    for k, v in model2.state_dict().items():
        np.testing.assert_array_equal(arr(v), want[k], err_msg=k)
