"""Embedding's ``max_norm``: the rows looked up are shrunk in place before the lookup,
as torch's ``embedding_renorm_`` does; outputs, weights and gradients match torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import scellis as sc


def _weight(seed=0):
    return np.random.default_rng(seed).standard_normal((6, 4)).astype(np.float32) * 2


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_module_max_norm_matches_torch(norm_type):
    w0 = _weight()
    idx = np.random.default_rng(1).integers(0, 6, (2, 5))
    g = np.random.default_rng(2).standard_normal((2, 5, 4)).astype(np.float32)
    got = []
    for lib in (sc, torch):
        e = lib.nn.Embedding(6, 4, max_norm=1.5, norm_type=norm_type)
        e.load_state_dict({"weight": lib.tensor(w0)})
        out = e(lib.tensor(idx))
        (out * lib.tensor(g)).sum().backward()
        got.append(
            [np.asarray(t.tolist()) for t in (out.detach(), e.weight.detach(), e.weight.grad)]
        )
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_functional_max_norm_renorms_the_weight_in_place():
    w0 = _weight(3)
    got = []
    for lib in (sc, torch):
        w = lib.tensor(w0)
        out = lib.nn.functional.embedding(lib.tensor([4, 5, 4]), w, max_norm=2.0)
        got.append([np.asarray(out.tolist()), np.asarray(w.tolist())])
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
