"""Replayed training steps (train layer): the loop's step as a recorded schedule.

``fit`` (by default, where the device keeps a dispatch list; ``replay=False``: never)
hands each step to ``TrainReplay``: the first step runs
eagerly (it makes the optimizer state, the gradient buffers and the cached
constants), the next two run eagerly while recorded, and once their traces agree
(runtime.replay) every later step is the schedule: the batch is copied into the
recorded input buffers, the optimizer's host half (``Optimizer.host_step``: step
counts, the scheduler's lr) re-encodes the update kernels' scalars, the random
ops (dropout masks) get the counters their Philox streams hand out in one small
device buffer (runtime.replay_draws), and the prepared dispatches run. No model forward, tape or
VJP runs in Python.

What the loop carries across steps lives in fixed buffers while replaying: the loss
accumulators and the dynamic loss scale (and its clean-step count) are copied back
into "pinned" tensors at the end of every eager step (inside the recording, so the
schedule does the same), and a log point zeroes the accumulators in place.

The overflow guard and the loss scaler need no host decision: the finite flag is a
device tensor and the update is gated by a device ``where``, so a skipped step is
replayed like any other (and, as eagerly, the host step counts still advance).
Steps that cannot replay run eagerly, with the reason in ``notes``: a batch of
another shape (an epoch's short last batch), or a step the comparison refuses
(a readback inside the step, ...). An eager step
between replays keeps the schedule valid: everything it rebinds is pinned back. Each
reason is told once, as an ``info`` event at the step that first ran eagerly for it.

Memory: the schedule keeps the storages its recorded step allocated, which that step
reused by liveness as it ran (devices/webgpu/replay.py), so replayed steps hold about
the eager peak plus the copies of the recorded inputs: on lavapipe, a small char
Transformer's run peaked at 1.08x its eager run (3.5x while every buffer of the step
kept a storage of its own). The memory plan counts it (``ir.plan.replay_resident``)
and offers eager steps as a remediation where it does not fit.
"""

from __future__ import annotations

from ..autograd import no_grad
from ..runtime.creation import zeros
from ..runtime.dispatch import apply_inplace
from ..runtime.replay import StepReplay, can_record
from ..runtime.tensor import Tensor


def _feeds(x, y) -> list:
    out = []
    for v in (x, y):
        vs = v if isinstance(v, (tuple, list)) else [v]
        out.extend(t for t in vs if isinstance(t, Tensor))
    return out


def _swap(v, swap: dict):
    if isinstance(v, (tuple, list)):
        return type(v)(swap.get(id(t), t) for t in v)
    return swap.get(id(v), v)


@no_grad()
def _copy_into(dst: Tensor, src: Tensor) -> None:
    apply_inplace("flat_gather", (src.reshape((src.numel,)),), (dst.reshape((dst.numel,)),))


def replays(asked: bool | None, device) -> bool:
    """Whether a fit call replays: ``None`` (the default) where the device can record
    a step, ``True`` always (a device that cannot says why), ``False`` never."""
    return asked is True or (asked is None and can_record(device))


class TrainReplay:
    """The replay side of one fit call. It never holds the run (``_Run`` holds it):
    device buffers must not sit in a reference cycle, whose collection would finalise
    their GPU buffers while the pool still hands the storage out."""

    def __init__(self, run):
        self.sr = StepReplay(run.device, patched={run.optimizer.op})
        self.pinned: list | None = None
        self.replayed = 0
        self.eager = 0
        self.notes: list[str] = []
        self.told = 0  # notes already handed to the run's events

    def untold(self) -> list[str]:
        """The fallback reasons noted since the last call (each reason once a run)."""
        out, self.told = self.notes[self.told :], len(self.notes)
        return out

    def _note(self, why: str) -> None:
        if why and why not in self.notes:
            self.notes.append(why)

    def step(self, r, x, y) -> None:
        feeds = _feeds(x, y)
        if self.sr.ready:
            why = self.sr.fits(feeds)
            if not why:
                self._replayed_step(r, x, feeds)
                return
            self._note(why)
        staged = self.sr.stage(feeds)
        if any(a is not b for a, b in zip(staged, feeds)):  # traced: on its own input copies
            swap = {id(a): b for a, b in zip(feeds, staged)}
            x, y = _swap(x, swap), _swap(y, swap)
        # the step's streams are set before the recording begins, as a replay sets them
        r.host_enter()
        with self.sr.eager(staged):
            r.eager_step(x, y)
            self._pin(r)
        self.eager += 1
        self._note(self.sr.reason)

    def _replayed_step(self, r, x, feeds) -> None:
        r.host_enter()
        patches = r.optimizer.host_step()
        self.sr.replay(feeds, patches)
        r.count(x)
        self.replayed += 1

    def _pin(self, r) -> None:
        """Copy what this step rebound back into the pinned tensors and rebind to them."""
        s = r.ts.scaler
        cur = [*r.acc, s.scale, s.good]
        if self.pinned is None:
            self.pinned = cur
            return
        for p, c in zip(self.pinned, cur):
            if c is not p and p is not None and c is not None:
                _copy_into(p, c)
        r.acc = list(self.pinned[:3])
        s.scale, s.good = self.pinned[3], self.pinned[4]

    def reset_window(self, acc) -> None:
        """Zero the window's loss sum and good-step count in place (a log point)."""
        for t in acc[:2]:
            _copy_into(t, zeros(t.shape, t.dtype, t.device))

    def record(self) -> dict:
        return {
            "replayed_steps": self.replayed,
            "eager_steps": self.eager,
            "dispatches_per_step": self.sr.schedule.dispatches if self.sr.schedule else None,
            "fallback": list(self.notes),
        }

    def close(self) -> None:
        self.sr.close()
        self.pinned = None
