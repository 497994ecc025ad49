"""The PyTorch-style examples (examples/pytorch/) run by torch and by scellis from the
same starting weights: per-step losses agree. The scripts themselves also run from the
command line, with either library."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.utils.data

import scellis as sc
import scellis.data

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "examples" / "pytorch"
sys.path.insert(0, str(SCRIPTS))

NAMES = ["mlp_regression", "lstm_forecaster", "conv_forecaster", "transformer_lm"]


def _both(name, device="reference", epochs=3):
    script = importlib.import_module(name)
    torch.manual_seed(0)
    state = script.build(torch).state_dict()
    want = script.train(torch, torch.utils.data, state, epochs)
    got = script.train(sc, scellis.data, state, epochs, device)
    return np.array(got), np.array(want)


def test_mlp_regression_losses_match_torch():
    got, want = _both("mlp_regression")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert got[-4:].mean() < got[:4].mean()  # the last epoch against the first


def test_lstm_forecaster_losses_match_torch():
    got, want = _both("lstm_forecaster")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert got[-4:].mean() < got[:4].mean()


def test_conv_norm_pool_bigru_forecaster_losses_match_torch():
    got, want = _both("conv_forecaster")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert got[-5:-1].mean() < got[:4].mean()


def test_transformer_lm_losses_match_torch():
    got, want = _both("transformer_lm")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got[-4:].mean() < got[:4].mean() - 0.5


@pytest.mark.webgpu
def test_transformer_lm_losses_match_torch_on_webgpu():
    got, want = _both("transformer_lm", device="webgpu", epochs=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_the_script_runs_with_scellis_from_the_command_line(name):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), "--epochs", "2"],
                       capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    losses = json.loads(p.stdout.splitlines()[-1])["losses"]
    assert len(losses) >= 4 and all(np.isfinite(losses))
    half = len(losses) // 2
    assert np.mean(losses[half:]) < np.mean(losses[:half])  # it learns
