"""Replayed steps with random ops: every mask is the eager step's, bit for bit.

A replay re-encodes each random op with the counter its Philox stream hands out, so
the host's streams move exactly as eagerly. Each check trains (or calls) the same
step eagerly and replayed from one seed on WebGPU (lavapipe, debug tier) and compares
losses and weights bit for bit, and checks that the schedule did run.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import scellis as sc
from scellis import functional as F
from scellis.base.rng import Generator
from scellis.catalog.blocks import MLP, MLPConfig
from scellis.catalog.losses import CrossEntropyLoss, MSELoss
from scellis.catalog.optim import Adam, AdamW
from scellis.model.zoo import CharTransformer
from scellis.runtime.creation import generator
from scellis.runtime.replay import ReplayedFunction
from scellis.train import Batches, TrainState, run

pytestmark = pytest.mark.webgpu


def _char(dev, remat=False):
    rng = np.random.default_rng(4)
    m = CharTransformer(20, 8, 2, 2, 8, device=dev, gen=Generator(0, "init"), dropout=0.1)
    # recomputed blocks rewind the dropout stream in backward to redraw their masks
    m.body.config = replace(m.body.config, activation_checkpointing=remat)
    x, y = rng.integers(0, 20, (24, 8)), rng.integers(0, 20, (24, 8))
    opt = AdamW(m, lr=3e-3, weight_decay=0.01)
    return m, CrossEntropyLoss(), opt, Batches(x.tolist(), y.tolist(), 8, device=dev)


def _mlp(dev):
    rng = np.random.default_rng(6)
    m = MLP(MLPConfig(2, 8, 1, activation="tanh", dropout=0.25), device=dev,
            gen=Generator(0, "init"))  # fmt: skip
    # 46 rows: each epoch ends on a short batch, an eager step between replayed ones
    x, y = rng.standard_normal((46, 2)), rng.standard_normal((46, 1))
    return m, MSELoss(), Adam(m, lr=0.02), Batches(x.tolist(), y.tolist(), 8, device=dev)


def _weights(model) -> dict:
    return {k: np.asarray(v.tolist()) for k, v in model.state_dict().items()}


def _fit(parts, replay, events=None, **kw):
    model, loss, opt, data = parts
    events = [] if events is None else events
    end = run(model, loss, opt, data, epochs=3, seed=5, determinism_tier="debug", log_every=1,
              on_event=events.append, replay=replay, **kw)  # fmt: skip
    return [e["loss"] for e in events if e["kind"] == "log"], _weights(model), end


def _same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def _char_remat(dev):
    return _char(dev, remat=True)


@pytest.mark.parametrize(
    "make", [_char, _char_remat, _mlp], ids=["char_transformer", "recomputed", "mlp"]
)
def test_training_with_dropout_replays_bitwise(gpu, make):
    want_losses, want, _ = _fit(make(gpu), False)
    losses, got, end = _fit(make(gpu), True)
    rec = end["replay"]
    assert rec["replayed_steps"] >= 5 and rec["dispatches_per_step"], rec
    assert not any("attrs" in why or "Philox" in why for why in rec["fallback"]), rec
    assert losses == want_losses  # every step's loss, exactly
    _same_weights(got, want)
    assert len(set(want_losses)) > 1


def test_resume_between_replayed_steps_is_bitwise(gpu):
    _, straight, end = _fit(_mlp(gpu), True)
    assert any("data-dependent shape" in why for why in end["replay"]["fallback"])  # eager too
    parts = _mlp(gpu)
    ts = TrainState(parts[0], parts[2], seed=5)
    _, _, end = _fit(parts, True, state=ts, max_steps=7)
    assert end["replay"]["replayed_steps"] >= 3  # it stopped between replayed steps
    sd = ts.state_dict()
    assert sd["rng"]["dropout"]["step"] == 6
    parts = _mlp(gpu)
    with sc.no_grad():
        for p in parts[0].parameters():  # other weights: all of them come from the state
            p.copy_(p * 0.5)
    _, resumed, end = _fit(parts, True, resume=sd)
    assert end["replay"]["replayed_steps"] >= 3
    _same_weights(resumed, straight)


def _torch_loop(device, compiled, steps=7):
    sc.manual_seed(0)
    model = sc.nn.Sequential(
        sc.nn.Linear(6, 16), sc.nn.GELU(), sc.nn.Dropout(0.2), sc.nn.Linear(16, 3)
    ).to(device)
    drop2d = sc.nn.Dropout1d(0.3)
    opt = sc.optim.AdamW(model.parameters(), lr=1e-2)
    loss_fn = sc.nn.CrossEntropyLoss()

    def step(x, y):
        h = drop2d(x.unsqueeze(2)).squeeze(2) + sc.randn((8, 6), device=device) * 0.1
        loss = loss_fn(model(sc.nn.functional.dropout(h, 0.1)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    fn = sc.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    losses = []
    for _ in range(steps):
        x = sc.tensor(rng.standard_normal((8, 6)).astype(np.float32), device=device)
        y = sc.tensor(rng.integers(0, 3, 8), device=device)
        losses.append(fn(x, y).item())
    return losses, [p.tolist() for p in model.parameters()], fn


def test_compiled_step_with_dropout_replays_bitwise(gpu):
    want, wparams, _ = _torch_loop(gpu, False)
    got, gparams, fn = _torch_loop(gpu, True)
    assert fn.reason == "" and fn.replayed == 4  # 1 eager, 2 recorded, 4 replayed
    assert got == want and gparams == wparams
    # the host's streams stand where the eager loop left them
    assert generator("dropout").draw == 7 * 3 and generator("default").draw == 7 * 2


def test_forward_with_draws_replays_bitwise(gpu):
    gen = generator("dropout")
    x = sc.tensor(np.random.default_rng(3).standard_normal((4, 16)), device=gpu, dtype="f32")

    def step(t):
        return F.dropout(t * 2.0, 0.5, True) + sc.rand((4, 16), device=gpu, gen=own)

    def calls(fn):
        gen.step, gen.draw, own.step, own.draw = 10, 0, 0, 0
        out = []
        for _ in range(6):
            gen.step, gen.draw = gen.step + 1, 0  # the host moves the stream between calls
            out.append(np.asarray(fn(x).tolist()))
        return out

    own = Generator(7, "mine")
    want = calls(step)
    f = ReplayedFunction(step, gpu, retries=0)
    got = calls(f)
    assert f.ready and not f.reason
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert not np.array_equal(want[3], want[4])  # the draws do change per call
    assert own.draw == 6
