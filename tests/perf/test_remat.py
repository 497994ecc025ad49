"""Activation rematerialisation: same gradients bit for bit, lower allocator peak.

The char Transformer record (examples/char_transformer.sml, shrunk to a context of 16,
width 16, 2 heads and batch 4 for lavapipe) is built twice from one seed: as written, and with
``activation_checkpointing: true`` (record-wide, or on the ``body`` block). One
training forward + backward on the same ids and targets: every parameter gradient
and the loss must be bitwise equal (debug tier: fixed reduction order on both
devices), and the allocator's peak above the parameters must drop. Measured at these
sizes: reference f32 peak 684 KB -> 448 KB, WebGPU (lavapipe) 639 KB -> 447 KB.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import scellis as sc
from scellis.base.dtypes import f16, f32
from scellis.base.rng import Generator
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.sml_registry import catalog_registry
from scellis.devices import get_device
from scellis.model.build import RecordModel
from scellis.sml import parse, validate
from scellis.train.step import working_copies

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONTEXT, BATCH, WIDTH = 16, 4, 16


def _record(remat: str = "") -> dict:
    text = (EXAMPLES / "char_transformer.sml").read_text()
    text = text.replace("shape: [batch, 32]", f"shape: [batch, {CONTEXT}]")
    text = text.replace("max_len: 32", f"max_len: {CONTEXT}")
    text = text.replace(": 64", f": {WIDTH}").replace("num_heads: 4", "num_heads: 2")
    if remat == "record":
        text += "activation_checkpointing: true\n"
    elif remat == "block":
        text = text.replace(
            "    kind: decoder", "    kind: decoder\n    activation_checkpointing: true"
        )
    doc = parse(text, "char_transformer.sml")
    problems = validate(doc, catalog_registry())
    assert not problems, [str(p) for p in problems]
    return doc.data


def _step(record: dict, device):
    dev = get_device(device)
    model = RecordModel(record, device=dev, gen=Generator(0, "init"))
    rng = np.random.default_rng(7)
    ids = sc.tensor(rng.integers(0, 88, (BATCH, CONTEXT)), device=dev, dtype="i32")
    tgt = sc.tensor(rng.integers(0, 88, (BATCH, CONTEXT)), device=dev, dtype="i32")
    if hasattr(dev, "sync"):
        dev.sync()
    base = dev.memory()["live_bytes"]
    dev.reset_peak()
    loss = CrossEntropyLoss()(model(ids), tgt)
    loss.backward()
    peak = dev.memory()["peak_bytes"] - base
    grads = {n: np.asarray(p.grad.tolist()) for n, p in model.named_parameters()}
    return float(loss.item()), grads, peak


def _device(name, request):
    return request.getfixturevalue("gpu") if name == "webgpu" else get_device(name)


@pytest.mark.parametrize(
    "device,remat",
    [
        ("reference", "record"),
        ("reference", "block"),
        pytest.param("webgpu", "record", marks=pytest.mark.webgpu),
    ],
)
def test_remat_gradients_bitwise_and_peak_drops(device, remat, request):
    dev = _device(device, request)
    loss0, grads0, peak0 = _step(_record(), dev)
    loss1, grads1, peak1 = _step(_record(remat), dev)
    assert loss1 == loss0
    assert grads1.keys() == grads0.keys()
    for name in grads0:
        assert np.array_equal(grads1[name], grads0[name]), name
    assert peak1 < 0.8 * peak0, (peak0, peak1)


def test_whole_block_remat_of_a_plain_block():
    # the LM head has no layers of its own: the record's flag rematerialises it whole
    rec = _record()
    rec["blocks"]["head"]["activation_checkpointing"] = True
    model = RecordModel(rec, gen=Generator(0, "init"))
    assert model.remat == {"head"}
    _, g0, _ = _step(_record(), "reference")
    _, g1, _ = _step(rec, "reference")
    for name in g0:
        assert np.array_equal(g1[name], g0[name]), name


def test_remat_flag_must_be_a_bool():
    text = (EXAMPLES / "lstm_forecaster.sml").read_text()
    text = text.replace("    output: last", "    output: last\n    activation_checkpointing: 3")
    text += "activation_checkpointing: maybe\n"
    problems = [str(p) for p in validate(parse(text, "f.sml"), catalog_registry())]
    assert any("blocks" not in p and "must be true or false, got 'maybe'" in p for p in problems)
    assert any("must be true or false, got 3" in p for p in problems), problems


def _mixed_step(record: dict):
    # the training step's mixed-f16 forward: the parameters' attributes are f16 working
    # copies while the model runs; backward runs after they were swapped back out
    dev = get_device("reference")
    model = RecordModel(record, device=dev, gen=Generator(0, "init"))
    rng = np.random.default_rng(11)
    ids = sc.tensor(rng.integers(0, 88, (BATCH, CONTEXT)), device=dev, dtype="i32")
    tgt = sc.tensor(rng.integers(0, 88, (BATCH, CONTEXT)), device=dev, dtype="i32")
    dev.reset_peak()
    with working_copies(model, f16):
        pred = model(ids)
    loss = CrossEntropyLoss()(pred.cast(f32), tgt)
    loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    return float(loss.item()), grads, dev.memory()["peak_bytes"]


def test_remat_under_mixed_f16_keeps_f32_gradients_bitwise():
    # the recompute reads the same f16 copies the first forward read, so the gradients
    # reach the f32 masters through their casts, as without checkpointing
    loss0, grads0, peak0 = _mixed_step(_record())
    loss1, grads1, peak1 = _mixed_step(_record("record"))
    assert loss1 == loss0
    assert {g.dtype for g in grads1.values()} == {f32}
    for name, g in grads0.items():
        assert np.array_equal(np.asarray(grads1[name].tolist()), np.asarray(g.tolist())), name
    assert peak1 < peak0, (peak0, peak1)
