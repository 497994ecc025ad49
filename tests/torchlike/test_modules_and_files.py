"""Module habits and files that cross between torch and scellis, against torch CPU."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from tlutil import close, pair

import scellis as sc

pytestmark = pytest.mark.torch


def _to_torch(state: dict) -> dict:
    return {k: torch.tensor(np.asarray(v.tolist(), dtype=np.float32)) for k, v in state.items()}


def test_forward_hooks_get_submodule_buffers_and_prefixes():
    m = sc.nn.Sequential(sc.nn.Linear(3, 4), sc.nn.Tanh(), sc.nn.Linear(4, 2))
    seen = []
    h = m.get_submodule("1").register_forward_hook(lambda mod, args, out: seen.append(out))
    pre = m[2].register_forward_pre_hook(lambda mod, args: (args[0] * 0.0,))
    y = m(sc.randn(5, 3))
    assert len(seen) == 1 and seen[0].shape == (5, 4)
    close(y, torch.tensor(m[2].bias.tolist()).expand(5, 2))  # the pre-hook zeroed the input
    h.remove(), pre.remove()
    m(sc.randn(5, 3))
    assert len(seen) == 1
    m.get_submodule("0").register_buffer("mask", sc.ones(2), persistent=False)
    m.get_submodule("0").register_buffer("count", sc.zeros(1))
    keys = list(m.state_dict())
    assert "0.count" in keys and "0.mask" not in keys and "0.mask" in dict(m.named_buffers())
    t = torch.nn.Linear(3, 4)
    assert [n for n, _ in sc.nn.Linear(3, 4).named_parameters(prefix="enc")] == [
        n for n, _ in t.named_parameters(prefix="enc")
    ]
    with pytest.raises(sc.ScellisError, match="no submodule"):
        m.get_submodule("0.nothing")
    assert m.get_parameter("2.bias") is m[2].bias and m.get_buffer("0.count") is not None
    with pytest.raises(sc.ScellisError, match="no parameter"):
        m.get_parameter("0.count")


def _counting_module(nn, m):
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)
            self.register_buffer("mean", m.zeros(2))
            self.register_buffer("seen", m.tensor(0))

        def forward(self, x):
            y = self.lin(x)
            with m.no_grad():
                self.seen += 1  # a new tensor assigned to the buffer's name
                self.mean = 0.5 * self.mean + 0.5 * y.mean(0)
            return y - self.mean

    return Counting()


def test_a_tensor_assigned_to_a_buffer_name_stays_a_buffer():
    ours, theirs = _counting_module(sc.nn, sc), _counting_module(torch.nn, torch)
    ours.load_state_dict(theirs.state_dict())
    sx, tx = pair(4, 3, seed=2)
    for _ in range(2):
        close(ours(sx), theirs(tx))
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    got, want = ours.state_dict(), theirs.state_dict()
    assert list(got) == list(want)
    close(got["mean"], want["mean"])
    assert got["seen"].item() == want["seen"].item() == 2


def test_state_dict_entries_are_detached_views_of_the_parameters_as_torchs():
    got = []
    for lib in (sc, torch):
        w, bias = pair(2, 3, seed=6)[lib is torch], pair(2, seed=7)[lib is torch]
        a, b = lib.nn.Linear(3, 2), lib.nn.Linear(3, 2)
        a.load_state_dict({"weight": w, "bias": bias})
        b.load_state_dict({k: v * 0.5 for k, v in a.state_dict().items()})
        avg = {k: v.clone() for k, v in a.state_dict().items()}
        for k, v in b.state_dict().items():
            avg[k] += v  # a checkpoint average: no autograd error on the copies
        a.state_dict()["bias"].mul_(2.0)  # reaches the parameter itself, as torch's
        assert not any(v.requires_grad for v in a.state_dict().values())
        assert a.state_dict(keep_vars=True)["weight"].requires_grad
        got.append((avg["weight"], avg["bias"], a.bias))
    for ours, theirs in zip(*got):
        close(ours, theirs)


def test_state_dicts_cross_key_for_key_both_ways(tmp_path):
    torch.manual_seed(0)
    th = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    ours_l = sc.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    ours_m = sc.nn.MultiheadAttention(8, 2, batch_first=True)
    sx, tx = pair(2, 5, 8)
    for ours, theirs in ((ours_l, th), (ours_m, tm)):
        assert list(ours.state_dict()) == list(theirs.state_dict())
        theirs.load_state_dict(_to_torch(ours.state_dict()))  # scellis -> torch, strict
        args_s, args_t = ((sx,), (tx,)) if ours is ours_l else ((sx, sx, sx), (tx, tx, tx))
        ys, yt = ours(*args_s), theirs(*args_t)
        ys, yt = (ys[0], yt[0]) if isinstance(ys, tuple) else (ys, yt)
        close(ys, yt, atol=1e-5)
        theirs.state_dict()  # torch -> scellis through a file torch wrote
    torch.save({"model": th.state_dict(), "step": 7}, tmp_path / "cross.pt")
    ck = sc.load(tmp_path / "cross.pt")
    assert ck["step"] == 7
    fresh = sc.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    fresh.load_state_dict(ck["model"])
    close(fresh(sx), th(tx), atol=1e-5)


def test_save_and_load_through_file_objects_as_torch_does():
    m = sc.nn.Linear(3, 2)
    opt = sc.optim.Adam(m.parameters(), lr=0.1)
    m(sc.randn(4, 3)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    sc.save({"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3}, buf)
    buf.seek(0)
    ck = sc.load(buf)
    assert ck["epoch"] == 3 and list(ck["model"]) == ["weight", "bias"]
    close(ck["model"]["weight"], torch.tensor(m.weight.tolist()))
    assert ck["opt"]["param_groups"][0]["lr"] == 0.1
    theirs = io.BytesIO()  # an archive torch wrote into memory
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, theirs)
    theirs.seek(0)
    assert sc.load(theirs)["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_torch_save_of_a_tensor_and_lists_loads_as_torch_load_gives_it(tmp_path):
    obj = {"w": torch.randn(3, 2), "ids": torch.arange(5), "hist": [0.5, 0.25], "pair": (1, "a")}
    torch.save(obj, tmp_path / "x.pt")
    got = sc.load(tmp_path / "x.pt")
    close(got["w"], obj["w"])
    assert got["ids"].tolist() == obj["ids"].tolist() and got["ids"].dtype == sc.i32
    assert got["hist"] == [0.5, 0.25] and got["pair"] == (1, "a")
    torch.save(torch.ones(2, 2) * 3, tmp_path / "t.pt")
    assert sc.load(tmp_path / "t.pt").tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_multihead_attention_with_masks_and_distinct_keys_values():
    torch.manual_seed(1)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    sm = sc.nn.MultiheadAttention(8, 2, batch_first=True)
    sm.load_state_dict(tm.state_dict())
    (sq, tq), (sk, tk), (sv, tv) = (
        pair(2, n, 8, seed=s, grad=True) for n, s in ((3, 0), (4, 1), (4, 2))
    )
    bool_mask = np.random.default_rng(0).random((3, 4)) > 0.6
    bool_mask[:, 0] = False  # every query keeps one key
    pad = np.zeros((2, 4), bool)
    pad[1, 3] = True
    float_mask = np.random.default_rng(1).standard_normal((4, 3, 4)).astype(np.float32)
    cases = [
        (dict(attn_mask=sc.tensor(bool_mask)), dict(attn_mask=torch.tensor(bool_mask))),
        (dict(attn_mask=sc.tensor(float_mask)), dict(attn_mask=torch.tensor(float_mask))),
        (dict(key_padding_mask=sc.tensor(pad)), dict(key_padding_mask=torch.tensor(pad))),
    ]
    total_s = total_t = 0
    for ks, kt in cases:
        ys, ws = sm(sq, sk, sv, **ks)
        yt, wt = tm(tq, tk, tv, **kt)
        close(ys, yt, atol=1e-5)
        close(ws, wt, atol=1e-5)
        total_s, total_t = ys.square().sum() + total_s, yt.square().sum() + total_t
    total_s.backward()
    total_t.backward()
    for s, t in ((sq, tq), (sk, tk), (sv, tv)):
        close(s.grad, t.grad, atol=1e-4)
    close(sm.in_proj_weight.grad, tm.in_proj_weight.grad, atol=1e-4)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflow step is on purpose
def test_autocast_and_grad_scaler_follow_torchs_rules():
    torch.manual_seed(2)
    tmodel = torch.nn.Linear(4, 3)
    model = sc.nn.Linear(4, 3)
    model.load_state_dict(tmodel.state_dict())
    opt, topt = sc.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(tmodel.parameters(), 0.1)
    scaler = sc.amp.GradScaler(init_scale=2.0**14, growth_interval=2)
    tscaler = torch.amp.GradScaler("cpu", init_scale=2.0**14, growth_interval=2)
    sx, tx = pair(6, 4)
    with pytest.warns(UserWarning, match="mixed_f16"), sc.autocast("cuda"):
        y = model(sx)
    assert y.dtype == sc.f32
    close(y, tmodel(tx), atol=2e-2)  # f16 working copies
    for step in range(4):
        big = 1e30 if step == 1 else 1.0  # an overflow: the step is skipped, the scale halves
        with sc.autocast("cuda"):
            loss = (model(sx) * big).square().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        tloss = (tmodel(tx) * big).square().mean()
        tscaler.scale(tloss).backward()
        tscaler.step(topt)
        tscaler.update()
        topt.zero_grad()
        assert scaler.get_scale() == tscaler.get_scale()
    close(model.weight, tmodel.weight, atol=2e-2)
