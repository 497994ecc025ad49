"""Schedulers against torch.optim.lr_scheduler: the same rates, compared with ==.

Each scheduler drives a one-parameter SGD and its torch twin drives a torch SGD;
the rates must be equal as floats over 60 steps (torch's recursive classes are
replayed, not approximated). cosine matches torch's closed form; warmup_cosine is
compared with SequentialLR(LinearLR, CosineAnnealingLR) within 1e-12 (see its doc).
"""

import math
import warnings

import pytest
import torch
from torch.optim import lr_scheduler as L

import scellis as sc
from scellis.catalog import lookup
from scellis.catalog.optim import SGD, Adam
from scellis.catalog.sched import SCHEDULERS, plateau_lrs

N = 60
LR = 0.1


def _ours(name, opt_cls=SGD, **cfg):
    opt = opt_cls([sc.tensor([1.0], requires_grad=True)], lr=LR)
    return opt, SCHEDULERS[name][1](opt, **cfg)


def _torch_opt(cls=torch.optim.SGD):
    return cls([torch.zeros(1, requires_grad=True)], lr=LR)


def _run(ours, theirs, topt, steps=N):
    got, want = [], []
    for _ in range(steps):
        got.append(ours.get_last_lr()[0])
        want.append(theirs.get_last_lr()[0])
        topt.step()
        ours.step()
        theirs.step()
    return got, want


TORCH_TWINS = [
    ("constant", {}, lambda o: L.ConstantLR(o, factor=1.0, total_iters=0)),
    ("constant", {"factor": 0.3, "total_iters": 7}, lambda o: L.ConstantLR(o, 0.3, 7)),
    ("step", {"step_size": 7, "gamma": 0.7}, lambda o: L.StepLR(o, 7, 0.7)),
    ("exponential", {"gamma": 0.93}, lambda o: L.ExponentialLR(o, 0.93)),
    (
        "multi_step",
        {"milestones": [5, 17, 17, 40], "gamma": 0.6},
        lambda o: L.MultiStepLR(o, [5, 17, 17, 40], 0.6),
    ),
    ("polynomial", {"total_iters": 37, "power": 1.7}, lambda o: L.PolynomialLR(o, 37, 1.7)),
    (
        "cosine_restarts",
        {"t_0": 7, "t_mult": 2, "eta_min": 0.01},
        lambda o: L.CosineAnnealingWarmRestarts(o, 7, 2, 0.01),
    ),
    ("cosine_restarts", {"t_0": 11}, lambda o: L.CosineAnnealingWarmRestarts(o, 11)),
    ("linear_warmup", {}, lambda o: L.LinearLR(o)),
    (
        "linear_warmup",
        {"start_factor": 0.1, "end_factor": 0.7, "total_iters": 23},
        lambda o: L.LinearLR(o, 0.1, 0.7, 23),
    ),
    ("one_cycle", {"total_steps": N, "max_lr": 0.3}, lambda o: L.OneCycleLR(o, 0.3, N)),
    (
        "one_cycle",
        {
            "total_steps": N,
            "max_lr": 0.3,
            "pct_start": 0.25,
            "anneal_strategy": "linear",
            "three_phase": True,
            "div_factor": 10.0,
        },
        lambda o: L.OneCycleLR(
            o, 0.3, N, pct_start=0.25, anneal_strategy="linear", three_phase=True, div_factor=10.0
        ),
    ),
]


@pytest.mark.parametrize(
    "name,cfg,twin", TORCH_TWINS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(TORCH_TWINS)]
)
def test_rates_equal_torch(name, cfg, twin):
    opt, ours = _ours(name, **cfg)
    topt = _torch_opt()
    theirs = twin(topt)
    steps = N - 1 if name == "one_cycle" else N  # torch refuses to step past total_steps
    got, want = _run(ours, theirs, topt, steps)
    assert got == want
    assert opt.param_groups[0]["lr"] == ours.get_last_lr()[0]


def test_one_cycle_cycles_momentum_and_beta1_like_torch():
    for ours_cls, theirs_cls, key in (
        (SGD, torch.optim.SGD, "momentum"),
        (Adam, torch.optim.Adam, "betas"),
    ):
        opt, ours = _ours("one_cycle", ours_cls, total_steps=30)
        topt = _torch_opt(theirs_cls)
        theirs = L.OneCycleLR(topt, LR, 30)
        for _ in range(29):
            assert opt.param_groups[0][key] == topt.param_groups[0][key]
            assert ours.get_last_lr() == theirs.get_last_lr()
            topt.step()
            ours.step()
            theirs.step()


def test_cosine_is_torchs_closed_form():
    opt, ours = _ours("cosine", t_max=25, eta_min=0.001)
    topt = _torch_opt()
    theirs = L.CosineAnnealingLR(topt, T_max=25, eta_min=0.001)
    for step in range(N):  # past t_max too: the closed form keeps going round
        theirs.last_epoch = step
        assert ours.lr_at(step, LR) == theirs._get_closed_form_lr()[0]
    got, want = _run(ours, L.CosineAnnealingLR(_torch_opt(), 25, 0.001), _torch_opt(), 25)
    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-15  # torch's recursion drifts


def test_warmup_cosine_formula_and_torch_sequential():
    w, n, s, lo = 10, 50, 0.1, 0.002
    opt, ours = _ours("warmup_cosine", warmup_steps=w, total_steps=n, start_factor=s, min_lr=lo)
    for t in (0, 5, 10, 30, 50, 55):
        if t < w:
            want = LR * (s + (1 - s) * t / w)
        else:
            want = lo + (LR - lo) * (1 + math.cos(math.pi * min(t - w, n - w) / (n - w))) / 2
        assert ours.lr_at(t, LR) == pytest.approx(want, rel=1e-15)
    topt = _torch_opt()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = L.SequentialLR(
            topt, [L.LinearLR(topt, s, 1.0, w), L.CosineAnnealingLR(topt, n - w, lo)], [w]
        )
        got, want = _run(ours, theirs, topt, n + 1)
    assert got == pytest.approx(want, rel=1e-12, abs=0)
    _, from_zero = _ours("warmup_cosine", warmup_steps=4, total_steps=8)
    assert [from_zero.lr_at(t, 1.0) for t in (0, 2, 4, 8, 9)] == [0.0, 0.5, 1.0, 0.0, 0.0]


PLATEAU = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 2, "threshold": 0.05, "cooldown": 3},
    {"patience": 1, "threshold_mode": "abs", "threshold": 0.01, "min_lr": 0.004},
]


@pytest.mark.parametrize("cfg", PLATEAU)
def test_reduce_on_plateau_equals_torch(cfg):
    metrics = [1.0 / (1 + t) if t < 15 else 0.06 + 0.01 * math.sin(t) for t in range(N)]
    if cfg.get("mode") == "max":
        metrics = [-m for m in metrics]
    opt, ours = _ours("reduce_on_plateau", **cfg)
    topt = _torch_opt()
    theirs = L.ReduceLROnPlateau(topt, **cfg)
    got, want = [], []
    for m in metrics:
        ours.step(m)
        theirs.step(m)
        got.append(opt.param_groups[0]["lr"])
        want.append(topt.param_groups[0]["lr"])
    assert got == want and len(set(got)) > 1
    assert plateau_lrs(metrics, LR, **cfg) == want


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_state_dict_resumes_the_sequence(name):
    cfg = {
        "step": {"step_size": 3},
        "exponential": {"gamma": 0.9},
        "cosine": {"t_max": 20},
        "warmup_cosine": {"warmup_steps": 5, "total_steps": 30},
        "one_cycle": {"total_steps": 30},
        "cosine_restarts": {"t_0": 4, "t_mult": 2},
        "multi_step": {"milestones": [3, 9]},
        "sequential": {
            "schedulers": (
                {"block_id": "training/scheduler/linear_warmup", "total_iters": 4},
                {"block_id": "training/scheduler/step", "step_size": 3},
            ),
            "milestones": (5,),
        },
        "chained": {"schedulers": ({"block_id": "training/scheduler/exponential", "gamma": 0.9},)},
    }.get(name, {})
    _, a = _ours(name, **cfg)
    metric = lambda t: [1.0, 0.9, 0.95, 0.97, 0.99, 0.98][t % 6]
    step = (
        (lambda s, t: s.step(metric(t))) if name == "reduce_on_plateau" else (lambda s, t: s.step())
    )
    for t in range(12):
        step(a, t)
    opt_b, b = _ours(name, **cfg)
    b.load_state_dict(a.state_dict())
    assert b.get_last_lr() == a.get_last_lr() == [opt_b.param_groups[0]["lr"]]
    for t in range(12, 24):
        step(a, t)
        step(b, t)
        assert a.get_last_lr() == b.get_last_lr()


def test_registered_with_schemas():
    for name, (cfg, impl) in SCHEDULERS.items():
        e = lookup(f"training/scheduler/{name}", "scheduler")
        assert e.config is cfg and e.impl is impl and e.doc
