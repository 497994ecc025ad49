"""Evaluation metrics against formulas written here with NumPy, on random data; the
record's eval section validated at line:col; baselines against hand-made forecasts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scellis.catalog.metrics import make_metric
from scellis.run.baselines import infer_season, unigram
from scellis.run.prepare import RecordProblems, check_record

RNG = np.random.default_rng(20261203)


def _metric(spec, pred, target):
    m = make_metric(spec)
    # in uneven batches, as a validation pass feeds them
    cut = len(pred) // 3
    m.update(pred[:cut].tolist(), target[:cut].tolist())
    m.update(pred[cut:].tolist(), target[cut:].tolist())
    return m.result()


@pytest.mark.parametrize("trial", range(5))
def test_regression_metrics_match_their_formulas(trial):
    n, h = RNG.integers(5, 60), RNG.integers(1, 4)
    t = RNG.normal(3.0, 2.0, (n, h))
    p = t + RNG.normal(0.0, 0.7, (n, h))
    t[0, 0] = 0.0  # MAPE leaves a zero target out
    err = p - t
    nz = t != 0
    want = {
        "mae": np.abs(err).mean(),
        "rmse": math.sqrt((err**2).mean()),
        "mape": 100 * np.abs(err[nz] / t[nz]).mean(),
        "smape": 200 * (np.abs(err) / (np.abs(p) + np.abs(t))).mean(),
        "r2": 1 - (err**2).sum() / ((t - t.mean()) ** 2).sum(),
    }
    for name, value in want.items():
        assert _metric(name, p, t) == pytest.approx(value, rel=1e-12), name


@pytest.mark.parametrize("k", [1, 3])
def test_classification_metrics_match_their_formulas(k):
    b, s, c = 4, 7, 11
    logits = RNG.normal(size=(b, s, c))
    ids = RNG.integers(0, c, (b, s))
    top = np.argsort(-logits, axis=-1)[..., :k]
    hit = (top == ids[..., None]).any(-1).mean()
    assert _metric({"metric": "top_k_accuracy", "k": k}, logits, ids) == pytest.approx(hit)
    acc = (logits.argmax(-1) == ids).mean()
    assert _metric("accuracy", logits, ids) == pytest.approx(acc)
    ce = 1.7
    assert make_metric("perplexity").of_loss(ce) == pytest.approx(math.exp(ce))
    assert make_metric("bits_per_char").of_loss(ce) == pytest.approx(ce / math.log(2))


def test_a_sine_has_its_period_and_noise_has_none():
    t = np.arange(400)
    assert infer_season(list(np.sin(2 * math.pi * t / 12) + RNG.normal(0, 0.1, 400))) == 12
    assert infer_season(list(np.cumsum(RNG.normal(size=400)) * 0 + 5.0)) is None


class _Text:
    def __init__(self, y_train, y_val, v):
        self.y_train, self.y_val, self.vocab = y_train, y_val, range(v)


def test_unigram_baseline_is_the_smoothed_cross_entropy():
    v = 6
    tr = RNG.integers(0, v, (20, 9))
    va = RNG.integers(0, v, (5, 9))
    counts = np.bincount(tr.ravel(), minlength=v) + 1
    prob = counts / counts.sum()
    want = -np.log(prob[va.ravel()]).mean()
    got = unigram(_Text(tr.tolist(), va.tolist(), v))
    assert got["val_loss"] == pytest.approx(want)
    assert got["bits_per_char"] == pytest.approx(want / math.log(2))
    assert got["accuracy"] == pytest.approx((va.ravel() == counts.argmax()).mean())


RECORD = """\
model: t/m@1
inputs:
  window: { shape: [batch, 4, 1], dtype: f32 }
blocks:
  lstm: { block_id: nn/lstm, in: window, input_size: 1, hidden_size: 3, output: last }
  head: { block_id: nn/regression_head, in: lstm, in_features: 3, n_outputs: 1 }
outputs: [head]
optimizer: { block_id: training/optimizer/adam, lr: 0.01 }
loss: { block_id: training/loss/mse }
determinism_tier: debug
eval:
  metrics: [mae, @M@]
  early_stopping: { metric: @E@, patience: 2 }
"""


@pytest.mark.parametrize(
    "metric, early, at, words",
    [
        ("bogus", "val_mae", "bogus", "unknown metric 'bogus'"),
        ("rmsee", "val_mae", "rmsee", "did you mean 'rmse'"),
        ("{metric: top_k_accuracy, k: 0}", "val_mae", "0}", "k must be >= 1"),
        ("{metric: mae, q: 1}", "val_mae", "q: 1", "unknown option 'q' of mae"),
        ("rmse", "val_r2", "val_r2", "'val_r2' is not measured by this run"),
    ],
)
def test_eval_section_problems_are_located(metric, early, at, words):
    text = RECORD.replace("@M@", metric).replace("@E@", early)
    with pytest.raises(RecordProblems) as e:
        check_record(text, "m.sml")
    d = e.value.problems[0]
    line = next(i for i, s in enumerate(text.splitlines(), 1) if at in s and "mae, " in s
                or at in s and "early" in s)  # fmt: skip
    col = text.splitlines()[line - 1].index(at) + 1
    assert (d.line, d.col) == (line, col) and words in str(d), str(d)


def test_a_valid_eval_section_passes():
    text = RECORD.replace("@M@", "{metric: top_k_accuracy, k: 2}").replace("@E@", "val_mae")
    assert check_record(text, "m.sml")["eval"]["early_stopping"]["metric"] == "val_mae"
