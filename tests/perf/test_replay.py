"""Schedule replay: replayed training and inference steps are bitwise the eager ones.

Each run trains the same model twice from one seed on the same batches, eagerly and
with ``replay=True`` (WebGPU on lavapipe, debug tier), and compares every logged loss
and every final weight bit for bit. The data have a short last batch per epoch, so
the replayed runs also go through the eager fallback and back (the schedule stays
valid across it). The refusals are checked too: a step that moves a Philox stream in its
own Python, and the reference device, which has no dispatch list; both say so and
stay eager with identical results.
"""

from __future__ import annotations

import numpy as np
import pytest

import scellis as sc
from scellis import functional as F
from scellis.autograd import no_grad
from scellis.base.rng import Generator
from scellis.catalog.blocks import MLP, MLPConfig
from scellis.catalog.losses import CrossEntropyLoss, MSELoss
from scellis.catalog.optim import Adam, AdamW
from scellis.devices import get_device
from scellis.model.zoo import CharTransformer, LSTMForecaster
from scellis.runtime.replay import ReplayedFunction
from scellis.train import Batches, run

pytestmark = pytest.mark.webgpu


def _lstm(dev, rng):
    m = LSTMForecaster(1, 8, 1, 1, device=dev, gen=Generator(0, "init"))
    x, y = rng.standard_normal((29, 6, 1)), rng.standard_normal((29, 1))
    return m, MSELoss(), Adam(m, lr=0.01), Batches(x.tolist(), y.tolist(), 8, device=dev)


def _char(dev, rng):
    m = CharTransformer(20, 8, 2, 2, 8, device=dev, gen=Generator(0, "init"))
    x, y = rng.integers(0, 20, (29, 8)), rng.integers(0, 20, (29, 8))
    opt = AdamW(m, lr=3e-3, weight_decay=0.01)
    return m, CrossEntropyLoss(), opt, Batches(x.tolist(), y.tolist(), 8, device=dev)


def _mlp(dev, rng):
    m = MLP(MLPConfig(3, 8, 1, activation="tanh"), device=dev, gen=Generator(0, "init"))
    x, y = rng.standard_normal((29, 3)), rng.standard_normal((29, 1))
    return m, MSELoss(), Adam(m, lr=0.01), Batches(x.tolist(), y.tolist(), 8, device=dev)


def _train(make, dev, replay: bool | None, epochs: int = 3, events=None, **kw):
    model, loss, opt, data = make(dev, np.random.default_rng(5))
    events = [] if events is None else events
    end = run(
        model,
        loss,
        opt,
        data,
        epochs=epochs,
        determinism_tier="debug",
        log_every=2,
        grad_clip=1.0,
        on_event=events.append,
        replay=replay,
        **kw,
    )
    losses = [e["loss"] for e in events if e["kind"] == "log"]
    weights = {k: np.asarray(v.tolist()) for k, v in model.state_dict().items()}
    return losses, weights, end


def _same(a, b) -> None:
    assert a[0] == b[0]  # every logged loss, exactly
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        assert np.array_equal(a[1][k], b[1][k]), k


@pytest.mark.parametrize("make", [_lstm, _char], ids=["lstm_forecaster", "char_transformer"])
def test_replayed_training_is_bitwise_eager(gpu, make):
    eager = _train(make, gpu, False, epochs=2)
    replayed = _train(make, gpu, True, epochs=2)
    _same(replayed, eager)
    rec = replayed[2]["replay"]
    # 2 epochs of 4 batches (8, 8, 8, then 5 rows): step 1 warm-up, 2-3 recorded,
    # the two short batches eager, the other 3 replayed
    assert rec["replayed_steps"] == 3 and rec["eager_steps"] == 5, rec
    assert any("data-dependent shape" in why for why in rec["fallback"]), rec
    assert eager[2]["replay"] is None


def test_fit_replays_by_default_where_the_device_can(gpu):
    # replay=None (fit's default): replayed on WebGPU, each fallback reason told once
    events = []
    default = _train(_mlp, gpu, None, events=events)
    _same(default, _train(_mlp, gpu, False))
    rec = default[2]["replay"]
    assert rec["replayed_steps"] == 6 and rec["eager_steps"] == 6, rec  # 3 short batches
    told = [e for e in events if e["kind"] == "info"]
    assert [e["message"] for e in told] == [f"replay: step 4 ran eagerly: {rec['fallback'][0]}"]
    assert told[0]["step"] == 4  # the first short batch
    # the reference device has no dispatch list: its default is eager, with nothing to say
    events = []
    _, _, end = _train(_mlp, get_device("reference"), None, events=events)
    assert end["replay"] is None and not [e for e in events if e["kind"] == "info"]


@pytest.mark.parametrize("make", [_mlp, _lstm], ids=["mlp", "lstm_forecaster"])
def test_dynamic_loss_scaling_replays_bitwise(gpu, make):
    # the LSTM takes the fused step kernels in f16
    if not gpu.supports(sc.f16):
        pytest.skip("this adapter lacks shader-f16: no mixed precision to replay")
    prec = {"policy": "mixed_f16", "loss_scaling": "dynamic", "growth_interval": 2}
    eager = _train(make, gpu, False, precision=prec)
    replayed = _train(make, gpu, True, precision=prec)
    _same(replayed, eager)
    assert replayed[2]["replay"]["replayed_steps"] == 6
    assert replayed[2]["loss_scale"] == eager[2]["loss_scale"]
    if make is _mlp:
        assert replayed[2]["loss_scale"] > 2.0**16  # it grew


def test_a_stream_set_inside_the_step_is_refused_and_stays_eager(gpu):
    # the step moves the dropout stream in its own Python, which a replay never runs:
    # its masks could not follow, so every call stays eager (and correct)
    gen = sc.runtime.creation.generator("dropout")
    x = sc.tensor(np.random.default_rng(3).standard_normal((4, 16)), device=gpu, dtype="f32")

    def step(t):
        gen.step, gen.draw = gen.step + 1, 0
        return F.dropout(t * 2.0, 0.5, True)

    f = ReplayedFunction(step, gpu, retries=0)
    gen.step = 10
    got = [np.asarray(f(x).tolist()) for _ in range(4)]
    gen.step = 10
    want = [np.asarray(step(x).tolist()) for _ in range(4)]
    assert not f.ready
    assert "sets the Philox stream 'dropout'" in f.reason, f.reason
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert not np.array_equal(want[0], want[1])  # the masks do change per step


def test_reference_device_says_it_cannot_replay():
    _, _, end = _train(_lstm, get_device("reference"), True)
    rec = end["replay"]
    assert rec["replayed_steps"] == 0
    assert "no dispatch list" in rec["fallback"][0]


def test_inference_forward_replay(gpu):
    model = CharTransformer(20, 16, 2, 2, 8, device=gpu, gen=Generator(1, "init"))
    model.eval()
    rng = np.random.default_rng(2)
    batches = [sc.tensor(rng.integers(0, 20, (3, 8)), device=gpu, dtype="i32") for _ in range(6)]
    with no_grad():
        want = [np.asarray(model(x).tolist()) for x in batches]
        inputs = [np.asarray(x.tolist()) for x in batches]
        forward = ReplayedFunction(model, gpu)
        got = [np.asarray(forward(x).tolist()) for x in batches]
    # call 1 warm-up, 2 and 3 traced, 4-6 replayed
    assert forward.ready and not forward.reason
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    # replays write into the schedule's own input copies, never into the caller's tensors
    for x, before in zip(batches, inputs):
        assert np.array_equal(np.asarray(x.tolist()), before)
