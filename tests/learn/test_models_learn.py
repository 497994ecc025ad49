"""The two example models really learn from the bundled data, on both devices.

(a) the LSTM forecaster on yearly sunspots beats the persistence forecast's validation
MAE; (b) the 2-layer, 4-head char Transformer reaches a validation loss clearly below
the unigram entropy of the held-out text.
"""

import os
import tempfile

import pytest

from scellis.train.recipes import char_lm, forecast

os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())


# lavapipe takes about 1.5 s an epoch: 15 already leave the margin wide (0.65 of
# persistence's error, against the asked 0.8)
@pytest.mark.parametrize("device,epochs", [("reference", 60), ("webgpu", 15)])
def test_lstm_forecaster_beats_persistence(device, epochs):
    r = forecast(device, epochs=epochs, seed=0)
    print(r)
    assert r["device"] == device
    assert r["val_mae"] < 0.8 * r["persistence_mae"], r


@pytest.mark.parametrize("device", ["reference", "webgpu"])
def test_char_transformer_beats_unigram_entropy(device):
    # 110 steps end about 0.1 below the bound (lavapipe: 0.4 s a step)
    r = char_lm(device, steps=110, d_model=32, heads=4, layers=2, batch=8, seed=0)
    print(r)
    assert r["device"] == device
    assert r["val_loss"] < r["unigram_entropy"] - 0.3, r
