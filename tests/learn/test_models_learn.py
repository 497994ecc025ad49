"""The two example models really learn from the bundled data, and WebGPU trains them
as the reference device does.

(a) the LSTM forecaster on yearly sunspots beats the persistence forecast's validation
MAE; (b) the 2-layer, 4-head char Transformer reaches a validation loss clearly below
the unigram entropy of the held-out text. Both learn on the reference device over a
whole run; on WebGPU (lavapipe: seconds a step) the same runs, cut short, end on the
reference's validation figures, so the kernels follow the run that learns.
"""

import math
import os
import tempfile

import pytest

from scellis.train.recipes import char_lm, forecast

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())

# WebGPU's debug tier against the reference device, relative: measured 1.5e-7 (char
# Transformer, 8 steps) and 1.4e-7 (LSTM, 24 steps) on lavapipe; a wrong gradient or
# update moves a loss by far more after a few Adam steps
FOLLOWS_RTOL = 1e-5
CHAR = dict(d_model=32, heads=4, layers=2, batch=8, seed=0)


def test_lstm_forecaster_beats_persistence():
    r = forecast("reference", epochs=60, seed=0)
    print(r)
    assert r["device"] == "reference"
    assert r["val_mae"] < 0.8 * r["persistence_mae"], r


def test_lstm_forecaster_on_webgpu_follows_the_reference_run():
    ref, gpu = (forecast(device, epochs=3, seed=0) for device in ("reference", "webgpu"))
    assert gpu["device"] == "webgpu" and gpu["steps"] == ref["steps"] == 24
    assert gpu["val_loss"] == pytest.approx(ref["val_loss"], rel=FOLLOWS_RTOL)
    assert gpu["val_mae"] == pytest.approx(ref["val_mae"], rel=FOLLOWS_RTOL)


def test_char_transformer_beats_unigram_entropy():
    # 110 steps end about 0.1 below the bound
    r = char_lm("reference", steps=110, **CHAR)
    print(r)
    assert r["device"] == "reference"
    assert r["val_loss"] < r["unigram_entropy"] - 0.3, r


def test_char_transformer_on_webgpu_follows_the_reference_run():
    ref, gpu = (char_lm(device, steps=8, **CHAR) for device in ("reference", "webgpu"))
    assert gpu["device"] == "webgpu" and gpu["steps"] == ref["steps"] == 8
    assert gpu["val_loss"] == pytest.approx(ref["val_loss"], rel=FOLLOWS_RTOL)
    # eight Adam steps moved it off a uniform guess's loss, ln(vocab)
    assert ref["val_loss"] < math.log(ref["vocab"]) - 0.3, ref
