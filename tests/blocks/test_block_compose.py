"""Sequential and residual composition: torch.nn.Sequential's names, data-form layers."""

from __future__ import annotations

import torch
from blockutil import compare, gen, rng_for

import scellis as sc
from scellis.catalog import blocks as B


def test_sequential_from_layer_mappings_matches_torch_sequential():
    rng = rng_for("sequential")
    cfg = B.SequentialConfig(
        (
            {"block": "nn/linear", "in_features": 4, "out_features": 6},
            {"block": "nn/layer_norm", "normalized_shape": 6},
            B.LinearConfig(6, 3),
        )
    )
    m = B.Sequential(cfg, gen=gen())
    t = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.LayerNorm(6), torch.nn.Linear(6, 3))
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert list(m.state_dict()) == list(t.state_dict())
    compare(m, t, [rng.standard_normal((2, 4))], name="sequential")


class _TorchResidual(torch.nn.Sequential):
    def forward(self, x):
        return x + super().forward(x)


def test_residual_adds_the_input():
    rng = rng_for("residual")
    m = B.Residual(B.ResidualConfig((B.LayerNormConfig(5), B.MLPConfig(5, 7))), gen=gen())
    assert [n for n, _ in m.named_parameters()] == [
        "0.weight",
        "0.bias",
        "1.fc1.weight",
        "1.fc1.bias",
        "1.fc2.weight",
        "1.fc2.bias",
    ]
    mlp = torch.nn.Module()
    mlp.fc1, mlp.fc2 = torch.nn.Linear(5, 7), torch.nn.Linear(7, 5)
    mlp.forward = lambda x: mlp.fc2(torch.nn.functional.gelu(mlp.fc1(x)))
    compare(
        m,
        _TorchResidual(torch.nn.LayerNorm(5), mlp),
        [rng.standard_normal((3, 5))],
        name="residual",
    )


def test_sequential_of_built_modules_and_set_parameter():
    a = B.Linear(B.LinearConfig(3, 3), gen=gen())
    s = B.Sequential.of(a, B.Dropout(B.DropoutConfig(0.1)), B.Linear(B.LinearConfig(3, 2)))
    assert len(s) == 3 and s[0] is a
    s.set_parameter("0.bias", sc.zeros((3,)))
    assert a.bias.tolist() == [0.0, 0.0, 0.0] and a.bias.requires_grad
    s.eval()
    assert not s[1].training
