"""scellis.optim against torch.optim: weights loaded after the optimizer was made
still train, param groups, closures, moves, and the schedulers' rates."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nnutil import arr, rng_for

import scellis as sc
from scellis import nn, optim
from scellis.catalog.optim import Adam
from scellis.model import LSTMForecaster
from scellis.optim import lr_scheduler


def mlp(lib):
    return lib.Sequential(lib.Linear(3, 16), lib.Tanh(), lib.Linear(16, 1))


def data(n=24):
    r = rng_for("regression")
    x = r.standard_normal((n, 3)).astype(np.float32)
    y = (np.sin(x[:, :1]) + 0.5 * x[:, 1:2] * x[:, 2:3]).astype(np.float32)
    return x, y


def train(lib, model, opt, x, y, steps, dtype=None):
    xs, ys = lib.tensor(x, dtype=dtype), lib.tensor(y, dtype=dtype)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize(
    "make",
    [
        lambda lib, ps: lib.optim.Adam(ps, lr=1e-2),
        lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
        lambda lib, ps: lib.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
        lambda lib, ps: lib.optim.RMSprop(ps, lr=1e-3, centered=True),
        lambda lib, ps: lib.optim.Adagrad(ps, 0.05, 0.01, 0.01, 0.1),
        lambda lib, ps: lib.optim.NAdam(ps, lr=1e-2, momentum_decay=0.01),
        lambda lib, ps: lib.optim.RAdam(ps, 1e-2, (0.8, 0.99), 1e-8, 0.1, True),
    ],
)
def test_weights_loaded_after_the_optimizer_still_train(make):
    x, y = data()
    theirs = mlp(torch.nn)
    ours = mlp(nn)
    opt = make(sc, ours.parameters())
    ours.load_state_dict(theirs.state_dict())  # after the optimizer holds the parameters
    loaded = [arr(p) for p in ours.parameters()]
    topt = make(torch, theirs.parameters())
    got, want = train(sc, ours, opt, x, y, 8), train(torch, theirs, topt, x, y, 8)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert got[-1] < got[0]
    assert all(np.abs(arr(p) - w).max() > 0 for p, w in zip(ours.parameters(), loaded))
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(arr(p), tp.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_move_after_the_optimizer_keeps_training():
    x, y = data()
    theirs = mlp(torch.nn).double()
    ours = mlp(nn)
    ours.load_state_dict(theirs.state_dict())
    opt = optim.Adam(ours.parameters(), lr=1e-2)
    topt = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    got = train(sc, ours, opt, x, y, 2)
    ours.to(sc.f64)  # the group's flat buffer and its moments follow the parameters
    got += train(sc, ours, opt, x, y, 4, dtype="f64")
    want = train(torch, theirs, topt, x, y, 6, dtype=torch.float64)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    assert {p.dtype for p in ours.parameters()} == {sc.f64}


def test_param_groups_as_dicts_and_a_closure():
    x, y = data()
    theirs = mlp(torch.nn)
    ours = mlp(nn)
    ours.load_state_dict(theirs.state_dict())

    def groups(m):
        return [
            {"params": list(m[0].parameters()), "weight_decay": 0.0},
            {"params": list(m[2].parameters()), "lr": 0.05, "weight_decay": 0.01},
        ]

    opt = optim.SGD(groups(ours), lr=0.1, momentum=0.5)
    topt = torch.optim.SGD(groups(theirs), lr=0.1, momentum=0.5)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.05]
    xs, ys, tx, ty = sc.tensor(x), sc.tensor(y), torch.tensor(x), torch.tensor(y)
    for _ in range(4):

        def closure():
            opt.zero_grad()
            loss = nn.functional.mse_loss(ours(xs), ys)
            loss.backward()
            return loss

        def tclosure():
            topt.zero_grad()
            loss = torch.nn.functional.mse_loss(theirs(tx), ty)
            loss.backward()
            return loss

        assert opt.step(closure).item() == pytest.approx(topt.step(tclosure).item(), rel=1e-5)


SCHEDULES = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=7, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.25, total_iters=4)),
    ("ConstantLR", dict(factor=0.5, total_iters=3)),
    ("OneCycleLR", dict(max_lr=[0.5, 0.2], total_steps=12)),
    ("LambdaLR", dict(lr_lambda=lambda t: 1.0 / (1 + t))),
    ("MultiplicativeLR", dict(lr_lambda=lambda t: 0.95)),
]


@pytest.mark.parametrize("name, kw", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_schedulers_give_torchs_rates(name, kw):
    def make(lib, sched):
        a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 1)
        opt = lib.optim.SGD(
            [{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.01}],
            lr=0.1,
            momentum=0.9,
        )
        return opt, getattr(sched, name)(opt, **kw)

    opt, s = make(sc, lr_scheduler)
    topt, ts = make(torch, torch.optim.lr_scheduler)
    for _ in range(12):
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        assert [g["momentum"] for g in opt.param_groups] == pytest.approx(
            [g["momentum"] for g in topt.param_groups]
        )
        opt.step()
        topt.step()
        s.step()
        ts.step()


def test_plateau_follows_torch():
    opt = optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    topt = torch.optim.SGD(torch.nn.Linear(1, 1).parameters(), lr=1.0)
    s = lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, patience=1, factor=0.5)
    for m in [1.0, 0.5, 0.5, 0.5, 0.5, 0.4, 0.4, 0.4]:
        s.step(m)
        ts.step(m)
        assert opt.param_groups[0]["lr"] == topt.param_groups[0]["lr"]
    assert opt.param_groups[0]["lr"] < 1.0


def test_catalog_optimizer_on_an_sml_model_keeps_training_after_a_load(tmp_path):
    """The catalog path (optimizer given the Module, weights from a saved file) too."""
    model = LSTMForecaster(input_size=1, hidden_size=4, gen=sc.rng.Generator(1, "init"))
    opt = Adam(model, lr=0.05)
    other = LSTMForecaster(input_size=1, hidden_size=4, gen=sc.rng.Generator(2, "init"))
    sc.save(other.state_dict(), tmp_path / "w.safetensors")
    model.load_state_dict(sc.load(tmp_path / "w.safetensors"))
    loaded = [arr(p) for p in model.parameters()]
    assert all(np.array_equal(a, arr(b)) for a, b in zip(loaded, other.parameters()))
    x = sc.tensor([[[0.1 * t] for t in range(6)], [[0.05 * t] for t in range(6)]])
    y = sc.tensor([[0.7], [0.3]])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(np.abs(arr(p) - w).max() > 0 for p, w in zip(model.parameters(), loaded))


def test_set_parameter_after_the_optimizer_is_still_trained():
    m = nn.Linear(2, 1)
    opt = optim.SGD(m.parameters(), lr=0.5)
    w = m.weight
    m.set_parameter("weight", sc.tensor([[1.0, -1.0]]))  # new storage, same object
    assert m.weight is w and w.tolist() == [[1.0, -1.0]]
    m(sc.tensor([[1.0, 2.0]])).sum().backward()
    opt.step()  # the group re-gathers the rebound parameter and updates it
    assert w.tolist() == [[0.5, -2.0]]


def test_optimizer_state_by_parameter_like_torch():
    ours, theirs = nn.Linear(2, 1), torch.nn.Linear(2, 1)
    ours.load_state_dict(theirs.state_dict())
    opt, topt = optim.Adam(ours.parameters(), lr=0.1), torch.optim.Adam(theirs.parameters(), lr=0.1)
    x = [[1.0, -2.0]]
    ours(sc.tensor(x)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    opt.step()
    topt.step()
    st, tst = opt.state[ours.weight], topt.state[theirs.weight]
    assert st["step"] == 1 and int(tst["step"]) == 1
    for k in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(arr(st[k]), tst[k].numpy(), rtol=1e-6)
