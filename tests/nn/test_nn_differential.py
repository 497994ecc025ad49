"""The same training scripts run by torch and by scellis: per-step losses agree."""

from __future__ import annotations

import numpy as np
import torch
import torch.utils.data
from differential import (
    conv_forecaster,
    forecaster,
    mlp,
    train_conv_forecaster,
    train_forecaster,
    train_mlp,
)

import scellis as sc
import scellis.data


def _both(train, build):
    torch.manual_seed(0)
    state = build(torch).state_dict()
    want = train(torch, torch.utils.data, state)
    got = train(sc, scellis.data, state)
    return np.array(got), np.array(want)


def test_mlp_regression_losses_match_torch():
    got, want = _both(train_mlp, mlp)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert got[-4:].mean() < got[:4].mean()  # the last epoch against the first


def test_lstm_forecaster_losses_match_torch():
    got, want = _both(train_forecaster, forecaster)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert got[-4:].mean() < got[:4].mean()


def test_conv_norm_pool_bigru_forecaster_losses_match_torch():
    got, want = _both(train_conv_forecaster, conv_forecaster)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert got[-5:-1].mean() < got[:4].mean()
