"""The nn/activation block (what imported Relu/Tanh/Sigmoid/GELU/Softmax become) vs torch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import scellis as sc  # noqa: E402
from scellis.catalog import lookup  # noqa: E402

TORCH = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "softmax": lambda x: torch.softmax(x, -1),
}


@pytest.mark.parametrize("fn", list(TORCH))
def test_activation_matches_torch(fn):
    e = lookup("nn/activation", "block")
    block = e.impl(e.config(function=fn), device="reference")
    assert block.parameters() == []
    x = np.random.default_rng(len(fn)).standard_normal((3, 5)).astype(np.float32) * 3
    got = np.asarray(block(sc.tensor(x, device="reference")).tolist(), dtype=np.float32)
    np.testing.assert_allclose(got, TORCH[fn](torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
