"""Sequential and chained schedules against torch's SequentialLR and ChainedScheduler:
the rates of 80 steps, from a record's sections (catalog) and from scheduler objects
(scellis.optim.lr_scheduler, torch's signatures); two param groups with their own rates."""

import warnings

import pytest
import torch
from torch.optim import lr_scheduler as L

import scellis as sc
from scellis.catalog.optim import SGD, Adam
from scellis.catalog.sched import Chained, Sequential
from scellis.optim import lr_scheduler as ours_L

N = 80
LRS = (0.1, 0.03)


def _opts(torch_cls=torch.optim.SGD, ours_cls=SGD):
    def groups(lib, make):
        return [{"params": [make()], "lr": lr} for lr in LRS]

    ours = ours_cls(groups(sc, lambda: sc.tensor([1.0], requires_grad=True)), lr=LRS[0])
    theirs = torch_cls(groups(torch, lambda: torch.zeros(1, requires_grad=True)), lr=LRS[0])
    return ours, theirs


def _rates(ours, theirs, topt):
    got, want = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notes on SequentialLR's step(epoch)
        for _ in range(N):
            got.append([g["lr"] for g in ours.optimizer.param_groups])
            want.append(theirs.get_last_lr())
            topt.step()
            ours.step()
            theirs.step()
    return got, want


def _close(got, want):
    assert len(got) == len(want) == N
    for a, b in zip(got, want):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)


SEQUENTIAL = [
    (
        [
            {"block_id": "training/scheduler/linear_warmup", "start_factor": 0.1,
             "total_iters": 10},
            {"block_id": "training/scheduler/cosine", "t_max": 60, "eta_min": 0.001},
        ],
        [10],
        lambda o: [L.LinearLR(o, 0.1, total_iters=10), L.CosineAnnealingLR(o, 60, 0.001)],
    ),
    (
        [
            {"block_id": "training/scheduler/constant", "factor": 0.5, "total_iters": 4},
            {"block_id": "training/scheduler/exponential", "gamma": 0.95},
            {"block_id": "training/scheduler/multi_step", "milestones": [5, 12], "gamma": 0.5},
        ],
        [7, 30],
        lambda o: [L.ConstantLR(o, 0.5, 4), L.ExponentialLR(o, 0.95),
                   L.MultiStepLR(o, [5, 12], 0.5)],
    ),
]  # fmt: skip
CHAINED = [
    (
        [
            {"block_id": "training/scheduler/linear_warmup", "start_factor": 0.2,
             "total_iters": 8},
            {"block_id": "training/scheduler/exponential", "gamma": 0.97},
        ],
        lambda o: [L.LinearLR(o, 0.2, total_iters=8), L.ExponentialLR(o, 0.97)],
    ),
    (
        [
            {"block_id": "training/scheduler/constant", "factor": 0.3, "total_iters": 5},
            {"block_id": "training/scheduler/step", "step_size": 9, "gamma": 0.7},
            {"block_id": "training/scheduler/polynomial", "total_iters": 50, "power": 1.5},
        ],
        lambda o: [L.ConstantLR(o, 0.3, 5), L.StepLR(o, 9, 0.7), L.PolynomialLR(o, 50, 1.5)],
    ),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(SEQUENTIAL)))
def test_sequential_sections_match_sequential_lr(k):
    sections, milestones, twins = SEQUENTIAL[k]
    opt, topt = _opts()
    ours = Sequential(opt, schedulers=tuple(sections), milestones=tuple(milestones))
    theirs = L.SequentialLR(topt, twins(topt), milestones)
    _close(*_rates(ours, theirs, topt))


@pytest.mark.parametrize("k", range(len(CHAINED)))
def test_chained_sections_match_chained_scheduler(k):
    sections, twins = CHAINED[k]
    opt, topt = _opts()
    ours = Chained(opt, schedulers=tuple(sections))
    theirs = L.ChainedScheduler(twins(topt))
    _close(*_rates(ours, theirs, topt))


def test_torch_spelling_takes_scheduler_objects():
    opt, topt = _opts(torch.optim.Adam, Adam)
    ours = ours_L.SequentialLR(
        opt, schedulers=[ours_L.LinearLR(opt, 0.25, total_iters=6), ours_L.StepLR(opt, 10, 0.5)],
        milestones=[6],
    )  # fmt: skip
    theirs = L.SequentialLR(
        topt, schedulers=[L.LinearLR(topt, 0.25, total_iters=6), L.StepLR(topt, 10, 0.5)],
        milestones=[6],
    )  # fmt: skip
    _close(*_rates(ours, theirs, topt))
    assert ours.get_last_lr() == [g["lr"] for g in opt.param_groups]
    opt, topt = _opts(torch.optim.Adam, Adam)
    ours = ours_L.ChainedScheduler([ours_L.StepLR(opt, 10, 0.5), ours_L.ExponentialLR(opt, 0.98)])
    theirs = L.ChainedScheduler([L.StepLR(topt, 10, 0.5), L.ExponentialLR(topt, 0.98)])
    _close(*_rates(ours, theirs, topt))


def test_one_cycle_momentum_follows_the_active_part():
    """Rates and momenta while a one-cycle part is active (afterwards torch's next part
    starts from the rate OneCycleLR wrote into initial_lr, a torch quirk not copied)."""
    opt, topt = _opts(torch.optim.SGD, SGD)
    for g in (*opt.param_groups, *topt.param_groups):
        g["momentum"] = 0.9
    cycle = 30
    ours = ours_L.SequentialLR(
        opt, [ours_L.ConstantLR(opt, 0.5, 3), ours_L.OneCycleLR(opt, 0.5, total_steps=cycle)],
        [4],
    )  # fmt: skip
    theirs = L.SequentialLR(
        topt, [L.ConstantLR(topt, 0.5, 3), L.OneCycleLR(topt, 0.5, total_steps=cycle)], [4]
    )
    seen = []
    for _ in range(cycle):
        seen.append((opt.param_groups[1]["momentum"], topt.param_groups[1]["momentum"]))
        seen.append((opt.param_groups[1]["lr"], topt.param_groups[1]["lr"]))
        ours.step()
        theirs.step()
        topt.step()
    assert len({a for a, _ in seen[::2]}) > 2  # it cycles
    for a, b in seen[8:]:  # from the milestone on
        assert a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda o: Sequential(o, schedulers=({"block_id": "training/scheduler/step",
                                              "step_size": 2},), milestones=(3,)),
         "1 schedulers need 0 milestones"),
        (lambda o: Sequential(o, schedulers=({"block_id": "training/scheduler/step",
                                              "step_size": 2},) * 2, milestones=(0,)),
         "increasing steps >= 1"),
        (lambda o: Chained(o, schedulers=({"block_id": "training/scheduler/cosine",
                                           "t_max": 9},)),
         "Cosine is not a multiplicative schedule"),
        (lambda o: Sequential(o, schedulers=({"block_id": "training/scheduler/reduce_on_plateau"},
                                             {"block_id": "training/scheduler/step",
                                              "step_size": 2}), milestones=(3,)),
         "follows a metric"),
        (lambda o: ours_L.ChainedScheduler([]), "at least one scheduler"),
    ],
)  # fmt: skip
def test_bad_compositions_are_refused(make, message):
    opt, _ = _opts()
    with pytest.raises(sc.ScellisError, match=message):
        make(opt)


RECORD = """\
model: me/f@1
inputs:
  x: {shape: [batch, 4, 1]}
blocks:
  head: {block_id: nn/regression_head, in: x, in_features: 1, pool: last}
optimizer: {block_id: training/optimizer/sgd, lr: 0.1}
loss: {block_id: training/loss/mse}
determinism_tier: debug
scheduler:
  block_id: training/scheduler/sequential
  schedulers:
    - {block_id: training/scheduler/linear_warmup, start_factor: 0.1, total_iters: 10}
    - block_id: training/scheduler/chained
      schedulers:
        - {block_id: training/scheduler/step, step_size: 15, gamma: 0.5}
        - {block_id: training/scheduler/exponential, gamma: 0.99}
  milestones: [10]
"""


def _problems(text):
    from scellis.catalog.sml_registry import catalog_registry
    from scellis.sml import parse, validate

    return [str(d) for d in validate(parse(text, "m.sml"), catalog_registry())]


def test_a_record_names_a_composite_schedule():
    """The record's scheduler section, built as a run builds it, against torch's
    SequentialLR(LinearLR, ChainedScheduler(StepLR, ExponentialLR)) driven by hand (torch's
    SequentialLR cannot hold a ChainedScheduler: it calls step(0) at the milestone)."""
    from scellis.model.build import entry_object
    from scellis.sml import parse

    assert _problems(RECORD) == []
    opt = SGD([sc.tensor([1.0], requires_grad=True)], lr=0.1)
    ours = entry_object(parse(RECORD, "m.sml").data["scheduler"], "scheduler", opt)
    topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    warm = L.LinearLR(topt, 0.1, total_iters=10)
    want = []
    for _ in range(10):
        want.append(topt.param_groups[0]["lr"])
        topt.step()
        warm.step()
    for g in topt.param_groups:
        g["lr"] = g["initial_lr"]
    chain = L.ChainedScheduler([L.StepLR(topt, 15, 0.5), L.ExponentialLR(topt, 0.99)])
    for _ in range(N - 10):
        want.append(topt.param_groups[0]["lr"])
        topt.step()
        chain.step()
    got = []
    for _ in range(N):
        got.append(opt.param_groups[0]["lr"])
        ours.step()
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    "edit,where,message",
    [
        (("milestones: [10]", "milestones: [10, 20]"), "m.sml:17:",
         "2 schedulers need 1 milestones"),
        (("gamma: 0.99}", "gama: 0.99}"), "m.sml:16:", "unknown field 'gama'"),
        (("training/scheduler/step,", "training/scheduler/stepp,"), "m.sml:15:",
         "unknown block_id 'training/scheduler/stepp'"),
        (("{block_id: training/scheduler/linear_warmup, ", "{"), "m.sml:12:", "needs a block_id"),
        (("milestones: [10]", "milestones: [0]"), "m.sml:17:", "increasing steps >= 1, got [0]"),
        (("milestones: [10]", "milestones: [-3]"), "m.sml:17:", "increasing steps >= 1"),
        (("milestones: [10]", "milestones: [2.5]"), "m.sml:17:", "increasing steps >= 1"),
        (("milestones: [10]", "milestones: [ten]"), "m.sml:17:", "increasing steps >= 1"),
    ],
)  # fmt: skip
def test_composite_schedule_mistakes_are_located(edit, where, message):
    assert RECORD.replace(*edit) != RECORD
    problems = _problems(RECORD.replace(*edit))
    assert problems and all(p.startswith(where) for p in problems), problems
    assert any(message in p for p in problems), problems


def test_milestones_out_of_order_are_located_at_validation():
    three = RECORD.replace(
        "  milestones: [10]",
        "    - {block_id: training/scheduler/constant}\n  milestones: [30, 10]",
    )
    assert _problems(three.replace("[30, 10]", "[10, 30]")) == []
    for bad in ("[30, 10]", "[10, 10]"):
        problems = _problems(three.replace("[30, 10]", bad))
        assert [p[:9] for p in problems] == ["m.sml:18:"], problems
        assert "milestones must be increasing steps >= 1" in problems[0]


def test_a_composite_of_no_schedules_is_located_at_validation():
    chained = RECORD.index("    - block_id: training/scheduler/chained")
    empty = (RECORD[:chained] + "    - {block_id: training/scheduler/chained, schedulers: []}\n"
             + RECORD[RECORD.index("  milestones:"):])  # fmt: skip
    problems = _problems(empty)
    assert [p[:12] for p in problems] == ["m.sml:13:58:"], problems  # at its []
    assert "a composite schedule needs a scheduler" in problems[0]
