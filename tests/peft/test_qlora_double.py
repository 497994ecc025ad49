"""Double quantisation of NF4's block scales (QLoRA): the stored words equal the
pure-Python oracle's, the block computes with the scales an independent NumPy int8
round trip decodes, and the record says it (the plan: tests/plan/test_plan_qlora.py)."""

from __future__ import annotations

import numpy as np
import pytest
from peftutil import arr, rng_for
from test_peft_sml import BASE, _problems

import scellis as sc
from quantref import int8_round_trip
from scellis.base.errors import ScellisError
from scellis.base.quant import DQ_GROUP, NF4, QuantSpec, double_quantize, quantize
from scellis.catalog import peft
from scellis.catalog.blocks import Linear, LinearConfig, Sequential
from scellis.devices.reference.quant import codes_of


def _frozen_linear(n_in: int, n_out: int) -> Sequential:
    lin = Linear(LinearConfig(n_in, n_out), device="reference", gen=sc.rng.Generator(5, "init"))
    model = Sequential.of(lin)
    for p in model.parameters():
        p.requires_grad = False
    model._children["0"].bias.requires_grad = False
    return model


def _words(t) -> np.ndarray:
    return np.asarray(t.tolist(), np.uint32)


# 300 x 70 = 21000 weights: 329 blocks of 64, two rows of 256 scales (the second padded)
def test_the_stored_words_are_the_pure_python_oracles():
    model = _frozen_linear(70, 300)
    w = arr(model._children["0"].weight).astype(np.float32)
    assert peft.quantize_base(model, "nf4", double_quant=True) == ["0"]
    mod = model._children["0"]
    spec = QuantSpec("nf4", 300, 70)
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    scale_words, scale_scales = double_quantize(scales, spec)
    np.testing.assert_array_equal(_words(mod.weight_codes), np.frombuffer(words, np.uint32))
    np.testing.assert_array_equal(
        _words(mod.weight_scale_codes), np.frombuffer(scale_words, np.uint32)
    )
    np.testing.assert_array_equal(
        np.asarray(mod.weight_scale_scales.tolist(), np.float32),
        np.frombuffer(scale_scales, np.float32),
    )
    assert "weight_scales" not in mod._params and mod.quant.scale_spec.rows == 2


def test_a_double_quantised_block_computes_with_the_decoded_scales():
    model = _frozen_linear(70, 300)
    lin = model._children["0"]
    w, b = arr(lin.weight).astype(np.float32), arr(lin.bias)
    spec = QuantSpec("nf4", 300, 70)
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    # the oracle: NF4 levels times the block scales after an int8 round trip per 256
    padded = np.zeros(2 * DQ_GROUP, np.float32)
    padded[: spec.n_scales] = np.frombuffer(scales, np.float32)
    decoded = int8_round_trip(padded.reshape(2, DQ_GROUP))[0].reshape(-1)[: spec.n_scales]
    levels = np.asarray(NF4, np.float32)[codes_of(np.frombuffer(words, np.uint32), spec)]
    w_dq = (levels * np.repeat(decoded, 64)[: spec.numel]).reshape(300, 70)
    peft.quantize_base(model, "nf4", double_quant=True)
    x = rng_for("dq").standard_normal((6, 70)).astype(np.float32)
    want = x.astype(np.float64) @ w_dq.T.astype(np.float64) + b
    np.testing.assert_allclose(arr(model(sc.tensor(x))), want, rtol=1e-5, atol=1e-5)
    # and the scales' rounding is visible: the plain NF4 block differs
    assert np.abs(decoded - padded[: spec.n_scales]).max() > 0


def test_double_quant_is_nf4_only_and_checked_at_its_node():
    with pytest.raises(ScellisError, match="int8 has one per row"):
        peft.apply_finetune(
            _frozen_linear(8, 4), {"quantize_base": {"format": "int8", "double_quant": True}}
        )
    section = "finetune:\n  adapters: [{block_id: peft/lora, target_modules: [q]}]\n"
    bad = _problems(BASE + section + "  quantize_base: {format: int8, double_quant: true}\n")
    assert len(bad) == 1 and "double_quant" in bad[0] and bad[0].startswith("13:"), bad
    not_bool = _problems(BASE + section + "  quantize_base: {format: nf4, double_quant: 2}\n")
    assert len(not_bool) == 1 and "double_quant is true or false, not 2" in not_bool[0], not_bool
    assert _problems(BASE + section + "  quantize_base: {format: nf4, double_quant: true}\n") == []
