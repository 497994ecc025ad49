"""``scellis.compile``: a user-written step replayed, bit for bit the eager step."""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.devices.webgpu import replay as webgpu_replay


def _model_and_step(device, sched_inside=False):
    """A small classifier, its AdamW, a StepLR and the user's training step (which may
    step the scheduler itself)."""
    sc.manual_seed(0)
    model = sc.nn.Sequential(sc.nn.Linear(6, 16), sc.nn.GELU(), sc.nn.Linear(16, 3)).to(device)
    opt = sc.optim.AdamW(model.parameters(), lr=1e-2)
    sched = sc.optim.lr_scheduler.StepLR(opt, 10 if sched_inside else 2, 0.5)
    loss_fn = sc.nn.CrossEntropyLoss()

    def step(x, y):
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched_inside:
            sched.step()
        return loss

    return model, sched, step


def _loop(device, compiled, steps=7, sched_inside=False, odd_at=None):
    model, sched, step = _model_and_step(device, sched_inside)
    fn = sc.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    losses = []
    for i in range(steps):
        rows = 5 if i == odd_at else 8
        x = sc.tensor(rng.standard_normal((rows, 6)).astype(np.float32), device=device)
        y = sc.tensor(rng.integers(0, 3, rows), device=device)
        losses.append(fn(x, y).item())
        if not sched_inside:
            sched.step()
    return losses, [p.tolist() for p in model.parameters()], fn


def test_replayed_loop_is_the_eager_loop_bit_for_bit(gpu):
    want, wparams, _ = _loop(gpu, False, odd_at=5)
    with pytest.warns(UserWarning, match="runs eagerly: an input of shape"):
        got, gparams, fn = _loop(gpu, True, odd_at=5)
    assert got == want and gparams == wparams
    assert fn.replayed == 3  # 1 eager, 2 recorded, 1 odd-shaped eager, 3 replayed


def test_a_scheduler_inside_the_step_is_refused_aloud(gpu):
    want, _, _ = _loop(gpu, False, sched_inside=True)
    with pytest.warns(UserWarning, match="learning rate changes inside the step"):
        got, _, fn = _loop(gpu, True, sched_inside=True)
    assert got == want and fn.replayed == 0


def test_the_reference_device_runs_eagerly_and_says_so():
    want, _, _ = _loop("cpu", False, steps=3)
    with pytest.warns(UserWarning, match="no dispatch list"):
        got, _, fn = _loop("cpu", True, steps=3)
    assert got == want and fn.replayed == 0


def _quiet_loop(device, compiled, steps=24):
    """Batches uploaded first, then steps with no readback between them: many replayed
    steps reach the GPU in one submission."""
    model, _, step = _model_and_step(device)
    fn = sc.compile(step) if compiled else step
    rng = np.random.default_rng(2)
    batches = [
        (sc.tensor(rng.standard_normal((8, 6)).astype(np.float32), device=device),
         sc.tensor(rng.integers(0, 3, 8), device=device))
        for _ in range(4)
    ]  # fmt: skip
    for i in range(steps):
        fn(*batches[i % 4])
    return [p.tolist() for p in model.parameters()]


def test_steps_sharing_one_submission_each_read_their_own_optimizer_scalars(gpu, monkeypatch):
    """Each replayed step's optimizer update reads its step count (AdamW's bias
    corrections) from a ring of meta words. With a ring of 2 slots, reused within one
    submission, a reused slot must be written only after the work reading it was
    submitted: without that check the earlier steps read the later ones' scalars."""
    eager = _quiet_loop(gpu, False)
    monkeypatch.setattr(webgpu_replay, "PATCH_RING", 2)
    assert _quiet_loop(gpu, True) == eager
    monkeypatch.setattr(webgpu_replay.Schedule, "_ring_writer", lambda s, r: s.gpu.write_unread)
    assert _quiet_loop(gpu, True) != eager
