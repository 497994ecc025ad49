"""Helpers of the torch-habit tests: the same random values in both libraries."""

from __future__ import annotations

import numpy as np
import torch

import scellis as sc


def pair(*shape, seed=0, grad=False):
    """(scellis tensor, torch tensor) of the same random non-zero f32 values."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    a[a == 0] = 0.5
    s = sc.tensor(a, requires_grad=grad)
    t = torch.from_numpy(a.copy()).requires_grad_(grad)
    return s, t


def close(ours, theirs, atol=1e-5):
    """Values (and dtype family) of a scellis tensor match a torch tensor."""
    got = np.asarray(ours.tolist())
    want = theirs.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)
