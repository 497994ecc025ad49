"""A recorded step's storage: reused by liveness inside the step, never lent to others.

A schedule keeps the storages its recorded step allocated. While the step ran, a
storage whose buffer died went to the step's own free list and a later buffer of the
same step took it, as an eager step reuses the pool; so the schedule holds about the
eager step's peak. Checked on lavapipe: the allocator's peak over a replayed run
against an eager one (fresh backends, the same model and batches), results bitwise
equal; no tensor made after recording gets one of the schedule's storages; releasing
the schedule gives them back to the pool.
"""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis.autograd import no_grad
from scellis.base.rng import Generator
from scellis.catalog.losses import CrossEntropyLoss
from scellis.catalog.optim import AdamW
from scellis.devices.webgpu import WebGPUBackend
from scellis.model.zoo import CharTransformer
from scellis.runtime.replay import ReplayedFunction
from scellis.train import Batches, run

pytestmark = pytest.mark.webgpu


def _train(dev, replay: bool):
    rng = np.random.default_rng(11)
    model = CharTransformer(24, 16, 2, 2, 12, device=dev, gen=Generator(3, "init"))
    x, y = rng.integers(0, 24, (32, 12)), rng.integers(0, 24, (32, 12))
    data = Batches(x.tolist(), y.tolist(), 8, device=dev)
    opt = AdamW(model, lr=3e-3, weight_decay=0.01)
    events = []
    end = run(model, CrossEntropyLoss(), opt, data, epochs=2, determinism_tier="debug",
              log_every=1, on_event=events.append, replay=replay)  # fmt: skip
    losses = [e["loss"] for e in events if e["kind"] == "log"]
    weights = [np.asarray(v.tolist()) for v in model.state_dict().values()]
    return losses, weights, end, dev.peak_bytes


def test_replayed_training_holds_about_the_eager_peak():
    eager = _train(WebGPUBackend(), False)
    replayed = _train(WebGPUBackend(), True)
    assert replayed[2]["replay"]["replayed_steps"] == 5  # 8 steps: 1 warm-up, 2 recorded
    assert replayed[0] == eager[0]
    for a, b in zip(replayed[1], eager[1]):
        assert np.array_equal(a, b)
    # every buffer of the step in a storage of its own took 3.5x the eager peak here;
    # reusing by liveness leaves the inputs' copies and a little fragmentation
    assert eager[3] < replayed[3] < 1.5 * eager[3], (replayed[3], eager[3])


def _step(x):
    h = (x * 2.0).tanh()
    for _ in range(6):  # buffers that die inside the call, of a few sizes
        h = (h @ h.mT).tanh() @ h
    return h.sum(1)


def test_a_schedules_storage_is_never_lent_and_returns_to_the_pool():
    dev = WebGPUBackend()
    rng = np.random.default_rng(4)
    xs = [sc.tensor(rng.standard_normal((16, 16)), device=dev, dtype="f32") for _ in range(6)]
    with no_grad():
        want = [np.asarray(_step(x).tolist()) for x in xs]
        f = ReplayedFunction(_step, dev)
        got = [np.asarray(f(x).tolist()) for x in xs[:3]]
        assert f.ready
        trace = f.sr.schedule.trace
        storages = list(trace.owned)
        owned = {id(st) for st in storages}
        assert owned and not any(id(st) in owned for lst in dev._pool.values() for st in lst)
        # tensors of the step's own sizes, made and dropped between replays, while the
        # schedule's output is alive and its internal buffers are all dead
        for k in range(3, 6):
            others = [(x * 1.5) @ x for x in xs for _ in range(3)]
            assert not any(id(t._buf.handle) in owned for t in others)
            got.append(np.asarray(f(xs[k]).tolist()))
            del others
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    pooled = dev.pooled_bytes
    f.sr.close()
    assert dev.pooled_bytes > pooled  # the free storages went back to the pool
    assert all(st.owner is None for st in storages) and not trace.owned


def test_a_schedule_dropped_without_release_gives_its_storage_back():
    # a run's generator may be dropped mid-run (the tab's stop): no one calls close
    dev = WebGPUBackend()
    rng = np.random.default_rng(6)
    xs = [sc.tensor(rng.standard_normal((16, 16)), device=dev, dtype="f32") for _ in range(4)]
    with no_grad():
        f = ReplayedFunction(_step, dev)
        out = [f(x) for x in xs]
        assert f.ready
        storages = list(f.sr.schedule.trace.owned)
        pooled = dev.pooled_bytes
        del f
    assert all(st.owner is None for st in storages)
    assert dev.pooled_bytes > pooled
    # the replayed output the caller still holds keeps its storage until it goes
    held = out[-1]._buf.handle
    assert any(held is st for st in storages)
    assert not any(held is st for lst in dev._pool.values() for st in lst)
    del out, held
    assert all(any(st is p for lst in dev._pool.values() for p in lst) for st in storages)
