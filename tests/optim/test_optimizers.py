"""Optimizers against torch.optim: parameters and moments after 5 steps (RAdam: 8, past
its rectification switch at step 6), both devices.

Identical initial weights and identical random gradients go to a scellis optimizer
and to its torch twin (Lion: the reference implementation in conftest); after every
step the parameters, and after the last the state buffers, must agree within
``torch.testing.assert_close``'s float32 defaults. Two parameter shapes are reused
by every case so each WebGPU kernel variant compiles once.
"""

import numpy as np
import pytest
import torch

import scellis as sc
from conftest import DEVICES, TorchLion
from scellis.catalog.optim import SGD, Adagrad, Adam, AdamW, Lion, NAdam, RAdam, RMSprop

SHAPES = [(3, 4), (5,)]
STEPS = 5

CASES = {
    "sgd": [
        {"lr": 0.1},
        {"lr": 0.1, "momentum": 0.9},
        {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
        {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
        {"lr": 0.1, "momentum": 0.5, "maximize": True},
    ],
    "adam": [
        {"lr": 0.01},
        {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1},
        {"lr": 0.02, "amsgrad": True, "eps": 1e-6},
        {"lr": 0.01, "maximize": True},
    ],
    "adamw": [{"lr": 0.01}, {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}],
    "rmsprop": [
        {"lr": 0.01},
        {"lr": 0.01, "momentum": 0.9},
        {"lr": 0.01, "centered": True, "alpha": 0.9},
        {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1},
    ],
    "lion": [{"lr": 1e-3}, {"lr": 3e-3, "betas": (0.95, 0.98), "weight_decay": 0.1}],
    "adagrad": [
        {"lr": 0.1},
        {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.5},
        {"lr": 0.05, "eps": 1e-6, "maximize": True},
    ],
    "nadam": [
        {"lr": 0.01},
        {"lr": 0.01, "momentum_decay": 0.05, "weight_decay": 0.1},
        {"lr": 0.02, "betas": (0.8, 0.99), "weight_decay": 0.1, "decoupled_weight_decay": True},
    ],
    "radam": [
        {"lr": 0.01},
        {"lr": 0.01, "weight_decay": 0.1, "maximize": True},
        {"lr": 0.02, "betas": (0.8, 0.99), "weight_decay": 0.1, "decoupled_weight_decay": True},
    ],
}
OURS = {
    "sgd": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "lion": Lion,
    "adagrad": Adagrad,
    "nadam": NAdam,
    "radam": RAdam,
}
# torch keeps NAdam's running product of the momentum schedule as state; here it is a host
# scalar of the step count (ops.optim_adaptive), so it has no buffer to compare
HOST_STATE = {"step", "mu_product"}
STEPS_OF = {"radam": 8}
THEIRS = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "rmsprop": torch.optim.RMSprop,
    "lion": TorchLion,
    "adagrad": torch.optim.Adagrad,
    "nadam": torch.optim.NAdam,
    "radam": torch.optim.RAdam,
}
PARAMS = [(name, k, opts) for name, lst in CASES.items() for k, opts in enumerate(lst)]


def test_the_radam_cases_cross_the_rectification_switch():
    """Both of RAdam's regimes are compared above: plain momentum steps, then rectified."""
    from scellis.ops.optim_adaptive import radam_scalars

    for opts in CASES["radam"]:
        b1, b2 = opts.get("betas", (0.9, 0.999))
        flags = [
            radam_scalars({**RADAM_ATTRS, "beta1": b1, "beta2": b2, "step": t})["rectify"]
            for t in range(1, STEPS_OF["radam"] + 1)
        ]
        assert flags[0] == 0.0 and flags[-1] == 1.0


RADAM_ATTRS = {"lr": 0.01, "eps": 1e-8, "weight_decay": 0.0, "decoupled_weight_decay": False}


def _values(t) -> torch.Tensor:
    return torch.tensor(np.asarray(t.tolist(), dtype=np.float32))


def _draws(seed: int, steps: int = STEPS):
    rng = np.random.default_rng(seed)
    w0 = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]
    return w0, grads


def _pair(name, opts, device, seed=0):
    w0, grads = _draws(seed, STEPS_OF.get(name, STEPS))
    ours = [sc.tensor(w, device=device, requires_grad=True) for w in w0]
    theirs = [torch.tensor(w, requires_grad=True) for w in w0]
    return ours, theirs, OURS[name](ours, **opts), THEIRS[name](theirs, **opts), grads


def _feed(ours, theirs, grads, device):
    for p, t, g in zip(ours, theirs, grads):
        p.grad = sc.tensor(g, device=device)
        t.grad = torch.tensor(g)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,k,opts", PARAMS, ids=[f"{n}-{k}" for n, k, _ in PARAMS])
def test_matches_torch(name, k, opts, device):
    ours, theirs, opt, topt, grads = _pair(name, opts, device, seed=k)
    for step_grads in grads:
        _feed(ours, theirs, step_grads, device)
        opt.step()
        topt.step()
        for p, t in zip(ours, theirs):
            torch.testing.assert_close(_values(p), t.detach())
    for p, t in zip(ours, theirs):
        mine, want = opt.state_of(p), topt.state[t]
        names = set(mine) - {"step"}
        assert names == {k for k, v in want.items() if k not in HOST_STATE and v is not None}
        for key in names:
            torch.testing.assert_close(_values(mine[key]), want[key], msg=lambda m, key=key: key)
        if "step" in want:
            assert mine["step"] == int(want["step"])


@pytest.mark.parametrize("device", DEVICES)
def test_small_model_with_a_scheduler(device):
    """A two-layer model + MSE, Adam with lr changed every step: the lr is a kernel scalar."""
    rng = np.random.default_rng(7)
    w1, b1, w2 = (rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((4, 3), (3,), (3, 2)))
    x, y = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 2))
    ps = [sc.tensor(a, device=device, requires_grad=True) for a in (w1, b1, w2)]
    ts = [torch.tensor(a, requires_grad=True) for a in (w1, b1, w2)]
    opt, topt = Adam(ps, lr=0.05), torch.optim.Adam(ts, lr=0.05)
    xs, ys = sc.tensor(x, device=device), sc.tensor(y.astype(np.float32), device=device)
    xt, yt = torch.tensor(x), torch.tensor(y.astype(np.float32))
    for _ in range(STEPS):
        loss = sc.functional.mse_loss((xs @ ps[0] + ps[1]).tanh() @ ps[2], ys)
        tloss = torch.nn.functional.mse_loss((xt @ ts[0] + ts[1]).tanh() @ ts[2], yt)
        opt.zero_grad()
        topt.zero_grad()
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        for g in topt.param_groups:
            g["lr"] *= 0.7
        opt.lr = topt.param_groups[0]["lr"]
    for p, t in zip(ps, ts):
        torch.testing.assert_close(_values(p), t.detach())


def test_parameters_share_one_flat_buffer():
    ours, _, opt, _, _ = _pair("adam", {}, "reference")
    assert ours[0]._buf is ours[1]._buf
    assert (ours[0].offset, ours[1].offset) == (0, 12)


def test_missing_gradients_are_skipped_like_torch():
    """A parameter without a gradient keeps its value, state and step count (torch's rule),
    which splits the group into runs that agree on the step."""
    ours, theirs, opt, topt, grads = _pair("adam", {"lr": 0.1}, "reference", seed=3)
    for s, step_grads in enumerate(grads):
        _feed(ours, theirs, step_grads, "reference")
        if s in (1, 2):
            ours[0].grad = theirs[0].grad = None
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        torch.testing.assert_close(_values(p), t.detach())
        assert opt.state_of(p)["step"] == int(topt.state[t]["step"])
    assert [opt.state_of(p)["step"] for p in ours] == [3, 5]


@pytest.mark.parametrize("name,k", [("rmsprop", 3), ("adagrad", 1), ("nadam", 2), ("radam", 2)])
def test_state_dict_round_trip_resumes_exactly(name, k):
    """Stopped after 3 steps, saved as plain lists and restored into a fresh optimizer, the
    run continues bit for bit (RAdam across its rectification switch, NAdam's momentum
    schedule and Adagrad's first-step accumulator from the restored step counts)."""
    ours, theirs, opt, topt, grads = _pair(name, CASES[name][k], "reference")
    for step_grads in grads[:3]:
        _feed(ours, theirs, step_grads, "reference")
        opt.step()
    sd = opt.state_dict()
    plain = {
        **sd,
        "param_groups": [
            {**g, "state": {k: v.tolist() for k, v in g["state"].items()}}
            for g in sd["param_groups"]
        ],
    }
    resumed = [sc.tensor(p.tolist(), requires_grad=True) for p in ours]
    opt2 = OURS[name](resumed, **CASES[name][k])
    opt2.load_state_dict(plain)
    for step_grads in grads[3:]:
        for ps in (ours, resumed):
            for p, g in zip(ps, step_grads):
                p.grad = sc.tensor(g)
        opt.step()
        opt2.step()
    for a, b in zip(ours, resumed):
        assert a.tolist() == b.tolist()
    assert opt2.step_count == opt.step_count == len(grads)


def test_param_groups_take_their_own_options():
    w0, grads = _draws(5)
    ours = [sc.tensor(w, requires_grad=True) for w in w0]
    theirs = [torch.tensor(w, requires_grad=True) for w in w0]
    groups = lambda ps: [{"params": [ps[0]], "lr": 0.5}, {"params": [ps[1]], "momentum": 0.9}]
    opt, topt = SGD(groups(ours), lr=0.1), torch.optim.SGD(groups(theirs), lr=0.1)
    for step_grads in grads:
        _feed(ours, theirs, step_grads, "reference")
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        torch.testing.assert_close(_values(p), t.detach())


def test_registered_with_torch_defaults():
    from scellis.catalog import lookup, schema

    for name, cls in OURS.items():
        e = lookup(f"training/optimizer/{name}", "optimizer")
        assert e.impl is cls and e.config is cls.config and e.doc
        assert all(f.doc for f in schema(e))
    assert Adam.config().betas == (0.9, 0.999) and AdamW.config().weight_decay == 1e-2
    assert SGD.config().lr == 1e-3 and RMSprop.config().alpha == 0.99


def test_bad_options_are_refused():
    p = [sc.tensor([1.0], requires_grad=True)]
    with pytest.raises(sc.ScellisError, match="Nesterov"):
        SGD(p, nesterov=True)
    with pytest.raises(sc.ScellisError, match="betas"):
        Adam(p, betas=(0.9, 1.5))
    with pytest.raises(sc.ScellisError, match="lr"):
        Adam(p, lr=-1.0)
    with pytest.raises(sc.ScellisError, match="unknown option"):
        SGD([{"params": p, "betas": (0.9, 0.9)}])
