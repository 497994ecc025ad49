"""scellis.save / scellis.load: safetensors + JSON round trips, read by torch too."""

from __future__ import annotations

import math

import pytest
import safetensors.torch
import torch

import scellis as sc
from scellis import nn, optim


def test_state_dict_round_trip_and_torch_reads_the_weights(tmp_path):
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LSTM(4, 2, num_layers=2))
    path = tmp_path / "model.safetensors"
    sc.save(m.state_dict(), path)
    back = sc.load(path)
    assert list(back) == list(m.state_dict())
    for k, v in m.state_dict().items():
        assert back[k].tolist() == v.tolist() and back[k].dtype == v.dtype
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.LSTM(4, 2, 2))
    twin.load_state_dict(safetensors.torch.load_file(str(path)))
    for k, v in twin.state_dict().items():
        torch.testing.assert_close(v, torch.tensor(m.state_dict()[k].tolist()), rtol=0, atol=0)
    fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LSTM(4, 2, num_layers=2))
    fresh.load_state_dict(sc.load(path))
    assert [p.tolist() for p in fresh.parameters()] == [p.tolist() for p in m.parameters()]


def test_nested_trees_with_json_values(tmp_path):
    m = nn.Linear(2, 2)
    opt = optim.Adam(m.parameters(), lr=0.01)
    m(sc.tensor([[1.0, 2.0]])).sum().backward()
    opt.step()
    obj = {
        "model": m.state_dict(),
        "optimizer": opt.state_dict(),
        "epoch": 3,
        "note": "ok",
        "betas": (0.9, 0.999),
        "by_step": {1: 0.5, 2: float("inf")},
        "mask": sc.tensor([True, False]),
        "ids": sc.tensor([3, -1]),
        "none": None,
    }
    path = tmp_path / "ckpt.safetensors"
    sc.save(obj, path)
    back = sc.load(path)
    assert back["epoch"] == 3 and back["note"] == "ok" and back["none"] is None
    assert back["betas"] == (0.9, 0.999)
    assert back["by_step"][1] == 0.5 and math.isinf(back["by_step"][2])
    assert back["mask"].tolist() == [True, False] and back["ids"].tolist() == [3, -1]
    assert back["model"]["weight"].tolist() == m.weight.tolist()
    opt2 = optim.Adam(nn.Linear(2, 2).parameters(), lr=0.01)
    opt2.load_state_dict(back["optimizer"])
    assert opt2.state_dict()["param_groups"][0]["steps"] == [1, 1]
    raw = safetensors.torch.load_file(str(path))  # the tensors are plain safetensors
    assert "model.weight" in raw and raw["model.weight"].shape == (2, 2)


def test_a_file_written_by_torch_loads_flat(tmp_path):
    path = tmp_path / "theirs.safetensors"
    safetensors.torch.save_file(
        {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3).to(torch.bfloat16),
         "i": torch.tensor([1, 2], dtype=torch.int64)},
        str(path),
    )  # fmt: skip
    back = sc.load(path)
    assert back["w"].dtype == sc.f32 and back["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["i"].dtype == sc.i32 and back["i"].tolist() == [1, 2]


def test_unsavable_values_are_refused_without_pickle(tmp_path):
    with pytest.raises(sc.ScellisError, match="nothing is pickled"):
        sc.save({"f": lambda: 0}, tmp_path / "x.safetensors")
