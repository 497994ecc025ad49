"""Reductions over every gradient, run by run: the clipping norm and the finite flag.

The gradients are gathered a run of at most ``clip.RUN_ELEMENTS`` elements at a time.
With the bound lowered to a few hundred elements, so that a small model's gradients make
several runs (one gradient larger than the bound is a run of its own), the norms match
torch's ``clip_grad_norm_`` for norm types 1, 2, 3 and inf, the clipped gradients match
torch's, the finite flag finds an inf or NaN in any run, and the traced optimizer phase
of a training step allocates nothing larger than a run.
"""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import scellis as sc
from conftest import DEVICES
from scellis.catalog import clip
from scellis.catalog.clip import clip_grad_norm_
from scellis.ir.record import load_record
from scellis.ir.trace import trace
from scellis.train.guard import finite_flag, loop_update

SHAPES = [(7, 30), (500,), (3, 4), (10, 20), (1,)]  # runs of <= 256: 210 | 500 | 12 + 200 + 1


def _grads(seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * rng.uniform(0.1, 3.0)).astype(np.float32) for s in SHAPES]


def _ours(device, grads):
    ps = [
        sc.tensor(np.zeros(g.shape, np.float32), device=device, requires_grad=True) for g in grads
    ]
    for p, g in zip(ps, grads):
        p.grad = sc.tensor(g, device=device)
    return ps


@pytest.fixture
def small_runs(monkeypatch):
    monkeypatch.setattr(clip, "RUN_ELEMENTS", 256)
    sizes = [SimpleNamespace(numel=int(np.prod(s))) for s in SHAPES]
    assert [len(r) for r in clip._runs(sizes, 256)] == [1, 1, 3]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0, math.inf])
def test_the_norm_over_runs_is_torchs(device, norm_type, small_runs):
    grads = _grads(1)
    ps = _ours(device, grads)
    total = clip_grad_norm_(ps, 1.5, norm_type=norm_type)
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for t, g in zip(theirs, grads):
        t.grad = torch.tensor(g, dtype=torch.float64)
    want = torch.nn.utils.clip_grad_norm_(theirs, 1.5, norm_type=norm_type)
    np.testing.assert_allclose(float(total.item()), float(want), rtol=1e-5)
    for p, t in zip(ps, theirs):
        np.testing.assert_allclose(np.asarray(p.grad.tolist()), t.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("where", [0, 1, 2, 4])  # two lone runs, the gathered one (twice)
@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on inf * 0
def test_the_finite_flag_finds_a_bad_value_in_any_run(device, where, bad, small_runs):
    grads = _grads(2)
    assert finite_flag(_ours(device, grads)).item() is True
    g = grads[where].reshape(-1).copy()
    g[len(g) // 2] = bad
    grads[where] = g.reshape(grads[where].shape)
    assert finite_flag(_ours(device, grads)).item() is False


DENSE2 = Path(__file__).resolve().parents[1] / "plan" / "records" / "dense2_clip.sml"


def test_the_guard_allocates_no_more_than_a_run(monkeypatch):
    # a two-layer MLP of ~100k parameters: with runs of 4,096 elements, nothing the
    # optimizer phase allocates for a while (the flag's copies, clipping's) is larger than
    # the largest weight's own gradient; one flat copy of every gradient was ~100k before
    monkeypatch.setattr(clip, "RUN_ELEMENTS", 4096)
    tr = trace(load_record(str(DENSE2)), update=loop_update)
    kept = tr.state | tr.grads | set(tr.params)  # the moments, the flat gradient buffer
    largest = max(
        e[2] for e in tr.events if e[0] == "alloc" and e[4] == "optimizer" and e[1] not in kept
    )
    params = sum(tr.allocs()[s][0] for s in tr.params)
    assert params > 90_000 and largest <= 64 * 1024
