"""The Module surface torch users expect: names, state dicts, traversal, modes, moves."""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch

import scellis as sc
from scellis import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(2, 3, num_layers=2, batch_first=True)
        self.heads = nn.ModuleList([nn.Linear(3, 1), nn.Linear(3, 2)])
        self.norm = nn.LayerNorm(3)


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(2, 3, num_layers=2, batch_first=True)
        self.heads = torch.nn.ModuleList([torch.nn.Linear(3, 1), torch.nn.Linear(3, 2)])
        self.norm = torch.nn.LayerNorm(3)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: nn.Linear(3, 2), lambda: torch.nn.Linear(3, 2)),
        (lambda: nn.LSTM(1, 4, num_layers=2), lambda: torch.nn.LSTM(1, 4, num_layers=2)),
        (lambda: nn.GRU(2, 3, bias=False), lambda: torch.nn.GRU(2, 3, bias=False)),
        (lambda: nn.Embedding(5, 2), lambda: torch.nn.Embedding(5, 2)),
        (lambda: nn.LayerNorm(4), lambda: torch.nn.LayerNorm(4)),
        (Net, TorchNet),
    ],
)
def test_keys_and_shapes_are_torchs(ours, theirs):
    a, b = ours(), theirs()
    assert [(k, tuple(v.shape)) for k, v in a.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in b.state_dict().items()
    ]
    a.load_state_dict(b.state_dict())
    for k, v in a.state_dict().items():
        torch.testing.assert_close(torch.tensor(v.tolist()), b.state_dict()[k])


def test_missing_and_unexpected_keys_are_reported_like_torch():
    m = nn.Linear(3, 2)
    sd = {"weight": sc.zeros((2, 3)), "extra": sc.zeros((1,))}
    with pytest.raises(sc.ScellisError) as e:
        m.load_state_dict(sd)
    assert 'Missing key(s) in state_dict: "bias"' in str(e.value)
    assert 'Unexpected key(s) in state_dict: "extra"' in str(e.value)
    keys = m.load_state_dict(sd, strict=False)
    assert keys.missing_keys == ["bias"] and keys.unexpected_keys == ["extra"]
    assert m.weight.tolist() == [[0.0] * 3] * 2
    with pytest.raises(sc.ScellisError, match="size mismatch for weight"):
        m.load_state_dict({"weight": sc.zeros((3, 3)), "bias": sc.zeros((2,))})


def test_load_and_move_keep_the_parameter_objects():
    m = Net()
    before = m.parameters()
    m.load_state_dict(TorchNet().state_dict())
    assert all(a is b for a, b in zip(before, m.parameters()))
    m.to(sc.f64)
    assert all(a is b for a, b in zip(before, m.parameters()))
    assert {p.dtype for p in m.parameters()} == {sc.f64}
    m.to("cpu", dtype="f32")
    assert {p.dtype for p in m.parameters()} == {sc.f32}
    assert {p.device.name for p in m.parameters()} == {"reference"}


def test_traversal_modes_and_gradients():
    m = Net()
    assert [n for n, _ in m.named_children()] == ["rnn", "heads", "norm"]
    assert [n for n, _ in m.named_modules()] == ["", "rnn", "heads", "heads.0", "heads.1", "norm"]
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["LSTM", "Linear", "Linear", "ModuleList", "LayerNorm", "Net"]
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_(True)
    x = sc.tensor([[[0.5, -1.0]] * 4])
    y, _ = m.rnn(x)
    m.norm(m.heads[1](y).sum() * sc.ones((3,))).sum().backward()
    assert m.norm.weight.grad is not None
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_sequential_by_names_and_module_dict():
    s = nn.Sequential(OrderedDict(fc=nn.Linear(2, 3), act=nn.ReLU()))
    assert list(s.state_dict()) == ["fc.weight", "fc.bias"]
    ts = torch.nn.Sequential(OrderedDict(fc=torch.nn.Linear(2, 3), act=torch.nn.ReLU()))
    s.load_state_dict(ts.state_dict())
    x = [[1.0, -2.0]]
    torch.testing.assert_close(torch.tensor(s(sc.tensor(x)).tolist()), ts(torch.tensor(x)).detach())
    d = nn.ModuleDict({"a": nn.Linear(1, 1)})
    d["b"] = nn.Tanh()
    assert list(d) == ["a", "b"] and "a" in d and len(d) == 2
    assert list(d.state_dict()) == ["a.weight", "a.bias"]


def test_torch_tensors_of_any_dtype_load():
    m = nn.Linear(2, 1)
    sd = {"weight": torch.tensor([[0.5, -1.5]], dtype=torch.bfloat16),
          "bias": torch.tensor([2.0], dtype=torch.float64)}  # fmt: skip
    m.load_state_dict(sd)
    assert m.weight.tolist() == [[0.5, -1.5]] and m.bias.tolist() == [2.0]
    assert m.weight.dtype == sc.f32


def test_init_functions_write_in_place_and_follow_their_stream():
    m = nn.Linear(40, 30)
    opt_held = m.weight
    nn.init.zeros_(m.bias)
    assert m.bias.tolist() == [0.0] * 30
    nn.init.xavier_uniform_(m.weight, generator=sc.rng.Generator(4, "init"))
    w = m.weight.numpy(force=True)
    bound = (6.0 / 70) ** 0.5
    assert m.weight is opt_held and abs(w).max() <= bound and abs(w).max() > 0.9 * bound
    again = nn.Linear(40, 30)
    nn.init.xavier_uniform_(again.weight, generator=sc.rng.Generator(4, "init"))
    assert again.weight.tolist() == m.weight.tolist()
    nn.init.normal_(m.weight, std=0.02)
    assert 0.015 < m.weight.numpy(force=True).std() < 0.025
    nn.init.kaiming_uniform_(m.weight, a=5**0.5)  # torch's Linear default draw
    assert abs(m.weight.numpy(force=True)).max() <= 1 / 40**0.5 + 1e-6
