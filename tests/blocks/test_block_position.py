"""Learned and sinusoidal positional encodings against torch references; RoPE's properties."""

from __future__ import annotations

import math

import numpy as np
import torch
from blockutil import arr, check_normal, compare, gen, rng_for

import scellis as sc
from scellis.catalog import blocks as B


class _TorchLearned(torch.nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(n, d))

    def forward(self, x):
        return x + self.weight[: x.shape[-2]]


def test_learned_position_matches_torch():
    rng = rng_for("learned")
    m = B.LearnedPosition(B.LearnedPositionConfig(10, 4), gen=gen())
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    compare(m, _TorchLearned(10, 4), [rng.standard_normal((2, 6, 4))], name="learned")
    check_normal(B.LearnedPosition(B.LearnedPositionConfig(64, 16), gen=gen()).weight)
    check_normal(B.LearnedPosition(B.LearnedPositionConfig(64, 16, std=0.02)).weight, 0.02)


class _TorchSinusoid(torch.nn.Module):
    """The usual torch recipe (the PyTorch tutorial's PositionalEncoding, batch first)."""

    def __init__(self, d, n=64):
        super().__init__()
        pos = torch.arange(n, dtype=torch.float32)[:, None]
        inv = torch.tensor([10000.0 ** (-2.0 * i / d) for i in range(d // 2)])
        pe = torch.zeros(n, d)
        pe[:, 0::2] = torch.sin(pos * inv)
        pe[:, 1::2] = torch.cos(pos * inv)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.shape[-2]]


def test_sinusoidal_position_matches_torch():
    rng = rng_for("sinusoid")
    m = B.SinusoidalPosition(B.SinusoidalPositionConfig(6))
    assert list(m.named_parameters()) == []
    compare(m, _TorchSinusoid(6), [rng.standard_normal((2, 7, 6))], name="sinusoid")


def test_rotary_preserves_norms_and_relative_dot_products():
    rng = rng_for("rope")
    q = rng.standard_normal((1, 1, 1, 8)).astype(np.float32)
    k = rng.standard_normal((1, 1, 1, 8)).astype(np.float32)
    T = 6
    qs = sc.tensor(np.broadcast_to(q, (1, 1, T, 8)).copy())
    ks = sc.tensor(np.broadcast_to(k, (1, 1, T, 8)).copy())
    rq, rk = arr(B.rotary(qs))[0, 0], arr(B.rotary(ks))[0, 0]
    np.testing.assert_allclose(np.linalg.norm(rq, axis=-1), np.linalg.norm(q), rtol=1e-5)
    # <R_i q, R_j k> depends on i - j only
    dots = rq @ rk.T
    np.testing.assert_allclose(dots[3, 1], dots[4, 2], rtol=1e-4)
    np.testing.assert_allclose(dots[0, 0], float(q.ravel() @ k.ravel()), rtol=1e-5)
    assert not math.isclose(dots[1, 0], dots[0, 0])
