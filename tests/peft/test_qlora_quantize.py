"""Quantising on the device: the reference device's vectorised encoder writes the words
and scales of the pure-Python ``base.quant.quantize`` bit for bit, that oracle's codes
are the exact rounding (rational arithmetic), and ``quantize_base`` reads nothing back."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from peftutil import arr, char_model, rng_for
from qweights import hard_weight

import scellis as sc
from scellis.base.quant import NF4_MIDS, QuantSpec, quantize
from scellis.catalog import peft
from scellis.devices.reference.backend import ReferenceBackend
from scellis.devices.reference.quant import codes_of


def oracle(w: np.ndarray, spec: QuantSpec) -> tuple[np.ndarray, np.ndarray]:
    words, scales = quantize(w.reshape(-1).tolist(), spec)
    return np.frombuffer(words.tobytes(), np.uint32), np.frombuffer(scales.tobytes(), np.uint32)


def on_device(w: np.ndarray, spec: QuantSpec, device) -> tuple[np.ndarray, np.ndarray]:
    codes, scales = sc.tensor(w, device=device).quantized(**spec.attrs())
    got = np.asarray(codes.tolist(), np.uint32), np.asarray(scales.tolist(), np.float32)
    return got[0], got[1].view(np.uint32)


CASES = [("nf4", 9, 70, 64), ("nf4", 11, 31, 16), ("int8", 9, 70, 64), ("int8", 7, 33, 64)]


@pytest.mark.parametrize("fmt, rows, cols, block", CASES)
def test_the_reference_device_quantises_as_the_pure_python_code(fmt, rows, cols, block):
    w = hard_weight(rng_for(f"q{fmt}{rows}{cols}"), rows, cols)
    spec = QuantSpec(fmt, rows, cols, block)
    want = oracle(w, spec)
    got = on_device(w, spec, "reference")
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert len(np.unique(codes_of(want[0], spec))) > 8  # many codes, not a degenerate weight


def _exact_codes(w: np.ndarray, spec: QuantSpec) -> list[int]:
    """Each code by rational arithmetic: int8 rounds 127 v / max half to even, NF4 takes
    the nearest level of v / max, the lower one when exactly halfway."""
    flat = [Fraction(float(v)) for v in w.reshape(-1)]
    group = spec.cols if spec.fmt == "int8" else spec.block
    out = []
    for g0 in range(0, len(flat), group):
        chunk = flat[g0 : g0 + group]
        top = max(abs(v) for v in chunk) or Fraction(1)
        for v in chunk:
            if spec.fmt == "int8":
                out.append(round(127 * v / top) & 0xFF)  # Fraction rounds half to even
            else:
                out.append(sum(Fraction(m) < v / top for m in NF4_MIDS))
    return out


@pytest.mark.parametrize("fmt", ["nf4", "int8"])
def test_the_codes_are_the_exact_rounding_also_at_halfway_points(fmt):
    w = hard_weight(rng_for(f"exact{fmt}"), 8, 40)
    spec = QuantSpec(fmt, 8, 40, 16)
    words, _ = oracle(w, spec)
    assert codes_of(words, spec).tolist() == _exact_codes(w, spec)


def test_halfway_int8_values_round_to_even():
    # max 127/8: 127 v / max is 127, 63.5, -63.5, 1.5 and 2.5, all exact
    w = np.array([[15.875, 7.9375, -7.9375, 0.1875, 0.3125]], np.float32)
    spec = QuantSpec("int8", 1, 5)
    words, scales = oracle(w, spec)
    codes = codes_of(words, spec).astype(np.uint8).view(np.int8)
    assert codes.tolist() == [127, 64, -64, 2, 2]
    assert scales.view(np.float32)[0] == 0.125


def test_quantize_base_reads_nothing_back(monkeypatch):
    model = char_model()
    peft.apply_finetune(model, {"adapters": [{"block_id": "peft/lora",
                                              "target_modules": "*"}]})  # fmt: skip
    weights = {p: arr(m.weight) for p, m in model.named_modules()
               if getattr(m, "weight", None) is not None and m.weight.ndim == 2}  # fmt: skip

    def refuse(self, buf):
        raise AssertionError("quantising read a buffer back to the host")

    monkeypatch.setattr(ReferenceBackend, "read", refuse)
    done = peft.quantize_base(model, "nf4")
    monkeypatch.undo()
    mods = dict(model.named_modules())
    assert len(done) > 4
    for path in done:
        spec = mods[path].quant
        want = oracle(weights[path].astype(np.float32), spec)
        np.testing.assert_array_equal(np.asarray(mods[path].weight_codes.tolist()), want[0])
