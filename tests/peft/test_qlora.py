"""Quantised frozen base weights (QLoRA): the codes against an independent NumPy
quantiser, a quantised dense block against the f32 one, adapters training on top."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from peftutil import arr, char_model, ids_for, rng_for
from test_peft_sml import BASE, _problems

import scellis as sc
from quantref import NF4_PUBLISHED, int8_round_trip, nf4_round_trip
from scellis.base.dtypes import f16
from scellis.base.errors import ScellisError
from scellis.base.quant import NF4, QuantSpec, dequantize, quantize
from scellis.catalog import peft
from scellis.catalog.blocks import (
    Embedding,
    EmbeddingConfig,
    Linear,
    LinearConfig,
    LMHead,
    LMHeadConfig,
    Sequential,
)
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import Adam
from scellis.train.step import working_copies

LORA = {"block_id": "peft/lora", "target_modules": "*", "rank": 2, "alpha": 4.0}


def _round_trip(w: np.ndarray, fmt: str, block: int = 64) -> np.ndarray:
    spec = QuantSpec(fmt, *w.shape, block)
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    return np.asarray(dequantize(words, scales, spec), np.float32).reshape(w.shape)


def test_the_nf4_levels_are_the_published_table():
    np.testing.assert_allclose(NF4, NF4_PUBLISHED, rtol=0, atol=2e-7)


@pytest.mark.parametrize("shape, block", [((7, 70), 64), ((3, 11), 64), ((4, 40), 32)])
def test_nf4_round_trip_equals_an_independent_quantiser(shape, block):
    w = rng_for(f"nf4{shape}").standard_normal(shape).astype(np.float32)
    ours = _round_trip(w, "nf4", block)
    theirs, absmax = nf4_round_trip(w, block)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)
    # each value lands on its nearest level: off by at most half the widest gap
    half_gap = np.diff(NF4_PUBLISHED).max() / 2
    per_elem = np.repeat(absmax, block)[: w.size].reshape(shape)
    assert (np.abs(ours - w) <= half_gap * per_elem * (1 + 1e-6)).all()


def test_int8_round_trip_equals_an_independent_quantiser():
    w = rng_for("int8").standard_normal((6, 33)).astype(np.float32)
    ours = _round_trip(w, "int8")
    theirs, s = int8_round_trip(w)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)
    assert (np.abs(ours - w) <= s[:, None] / 2 * (1 + 1e-5)).all()


@pytest.mark.parametrize("fmt, bound", [("nf4", 0.12), ("int8", 0.01)])
def test_a_quantised_dense_block_is_close_to_the_f32_one(fmt, bound):
    lin = Linear(LinearConfig(48, 40), device="reference", gen=sc.rng.Generator(1, "init"))
    x = sc.tensor(rng_for("qx").standard_normal((9, 48)).astype(np.float32))
    want = arr(lin(x))
    lin.weight.requires_grad = False
    lin.bias.requires_grad = False
    model = Sequential.of(lin)
    assert peft.quantize_base(model, fmt) == ["0"]
    got = arr(model(x))
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert 0 < rel < bound  # measured (bench/RESULTS.md): nf4 ~0.09, int8 ~0.004-0.008


def _train(device: str, steps: int = 6):
    model = char_model(device)
    plan = peft.apply_finetune(model, {"adapters": [LORA], "quantize_base": "nf4"})
    assert plan.quantized and all("weight" not in n for n in plan.trainable)
    opt = Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    x, y = ids_for("qx", device=device), ids_for("qy", device=device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)
        loss = CrossEntropyLoss()(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def test_adapters_train_on_a_quantised_base():
    model, losses = _train("reference")
    assert losses[-1] < losses[0] * 0.9
    for name, p in model.named_parameters():
        assert (p.grad is None) == (not p.requires_grad), name


def test_adapter_gradients_equal_torch_with_the_dequantised_base():
    lin = Linear(LinearConfig(13, 5), device="reference", gen=sc.rng.Generator(2, "init"))
    model = Sequential.of(lin)
    w32 = arr(lin.weight).astype(np.float32)
    peft.apply_finetune(model, {"adapters": [LORA], "quantize_base": "nf4"})
    assert lin.weight is None  # the f32 weight is let go of: only the codes remain
    mod = model._children["0"]
    with sc.no_grad():  # B starts at zero: give it values so A's gradient is not zero
        mod.lora_B.copy_(sc.tensor(rng_for("B").standard_normal((5, 2)).astype(np.float32)))
    x = rng_for("x").standard_normal((4, 13)).astype(np.float32)
    r = rng_for("r").standard_normal((4, 5)).astype(np.float32)
    (model(sc.tensor(x)) * sc.tensor(r)).sum().backward()
    w = torch.from_numpy(arr(peft.quant.dequantized_weight(mod)))
    A = torch.tensor(arr(mod.lora_A), requires_grad=True)
    B = torch.tensor(arr(mod.lora_B), requires_grad=True)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = xt @ w.T + torch.from_numpy(arr(mod.bias)) + 2.0 * (xt @ A.T) @ B.T
    (y * torch.from_numpy(r).double()).sum().backward()
    np.testing.assert_allclose(arr(mod.lora_A.grad), A.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(mod.lora_B.grad), B.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.numpy(), nf4_round_trip(w32)[0], rtol=1e-6, atol=1e-7)


def test_a_quantised_base_needs_a_frozen_weight_and_no_dora():
    model = Sequential.of(Linear(LinearConfig(4, 3), device="reference"))
    with pytest.raises(ScellisError, match="no frozen dense weight"):
        peft.quantize_base(model, "nf4")
    dora = {**LORA, "block_id": "peft/dora"}
    with pytest.raises(ScellisError, match="DoRA"):
        peft.apply_finetune(model, {"adapters": [dora], "quantize_base": "nf4"})
    with pytest.raises(ScellisError, match="multiple of 8"):
        peft.apply_finetune(model, {"quantize_base": {"format": "nf4", "block_size": 12}})


@pytest.mark.parametrize(
    "value, want",
    [
        ("nf3", "13:18: quantize_base is one of nf4, int8, not 'nf3'"),
        ("{format: nf4, block_size: 12}", "13:44: the nf4 block size is a multiple of 8"),
        ("{format: nf4, blocks: 64}", "13:32: unknown quantize_base key 'blocks'"),
        ("{format: nf4, block_size: 0}", "13:44: the nf4 block size is a multiple of 8 from 8"),
        ("{format: nf4, block_size: -8}", "13:44: the nf4 block size is a multiple of 8 from 8"),
        ("{format: nf4, block_size: 4611686018427387904}", "13:44: the nf4 block size is a mult"),
        ("{format: nf4, block_size: 64.0}", "13:44: the nf4 block size is a multiple of 8"),
    ],
)
def test_quantize_base_is_checked_at_its_node(value, want):
    section = "finetune:\n  adapters: [{block_id: peft/lora, target_modules: [q]}]\n"
    problems = _problems(BASE + section + f"  quantize_base: {value}\n")
    assert len(problems) == 1 and problems[0].startswith(want), problems


def test_a_quantize_base_section_validates():
    section = "finetune:\n  adapters: [{block_id: peft/lora, target_modules: [q]}]\n"
    assert _problems(BASE + section + "  quantize_base: {format: int8}\n") == []


def test_mixed_precision_computes_in_f16_with_the_scales_kept_f32():
    model = char_model("reference")
    peft.apply_finetune(model, {"adapters": [LORA], "quantize_base": "int8"})
    x = ids_for("f16")
    want = arr(model(x))
    q = next(m for _, m in model.named_modules() if getattr(m, "quant", None))
    with working_copies(model, f16):
        assert q.weight_scales.dtype.name == "f32" and q.lora_A.dtype.name == "f16"
        got = arr(model(x))
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    assert 0 < rel < 5e-3


def test_describe_counts_weights_and_merge_decodes_the_base():
    plain, quantised = char_model("reference"), char_model("reference")
    peft.apply_finetune(plain, {"adapters": [LORA]})
    peft.apply_finetune(quantised, {"adapters": [LORA], "quantize_base": "nf4"})
    head = peft.describe(quantised).splitlines()[0]
    assert head.split(";")[1] == peft.describe(plain).splitlines()[0].split(";")[1]
    mod = quantised._children["body"].blocks[0].attn.q
    with sc.no_grad():  # B starts at zero: give it values so the merge has work to do
        mod.lora_B.copy_(sc.tensor(rng_for("B2").standard_normal((16, 2)).astype(np.float32)))
    x = ids_for("merge")
    want = arr(quantised(x))
    head_codes = quantised._children["head"]
    spec, words, scales = head_codes.quant, head_codes.weight_codes, head_codes.weight_scales
    assert peft.merge_lora(quantised)
    np.testing.assert_allclose(arr(quantised(x)), want, rtol=1e-4, atol=1e-5)
    # a plain model again: the quantised head is an LM head with the decoded weight
    assert not any(n.endswith(("_codes", "_scales")) for n in quantised.state_dict())
    head = quantised._children["head"]
    assert type(head).__name__ == "LMHead"
    decoded = dequantize(words.tolist(), scales.tolist(), spec)
    np.testing.assert_array_equal(arr(head.weight).reshape(-1), np.float32(decoded))


def test_a_frozen_untied_lm_head_is_quantised_and_computes_with_its_codes():
    model = char_model("reference")
    head = model._children["head"]
    w = arr(head.weight).astype(np.float32)
    plan = peft.apply_finetune(model, {"adapters": [LORA], "quantize_base": "nf4"})
    assert "head" in plan.quantized and "head.weight_codes" in model.state_dict()
    x = rng_for("head").standard_normal((5, w.shape[1])).astype(np.float32)
    want = x.astype(np.float64) @ nf4_round_trip(w)[0].T.astype(np.float64)
    got = arr(model._children["head"](sc.tensor(x)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_tied_lm_head_stays_f32():
    gen = sc.rng.Generator(3, "init")
    emb = Embedding(EmbeddingConfig(11, 16), device="reference", gen=gen)
    head = LMHead(LMHeadConfig(16, 11), device="reference", gen=gen, embedding=emb)
    lin = Linear(LinearConfig(16, 16), device="reference", gen=gen)
    model = Sequential.of(emb, lin, head)
    for p in model.parameters():
        p.requires_grad = False
    assert peft.quantize_base(model, "nf4") == ["1"]  # the dense block, not the head
    assert type(model._children["2"]) is LMHead and model._children["2"].tied is emb
