"""TrainState: plain data that resumes a run bitwise (debug), with no readback to take it."""

import pytest
from trainutil import XS, YS, count_reads, weights

import scellis as sc
from scellis.catalog.blocks import MLP, MLPConfig
from scellis.catalog.losses import MSELoss
from scellis.catalog.optim import Adam
from scellis.catalog.sched import Cosine
from scellis.runtime.tensor import Tensor
from scellis.train import Batches, TrainState, run

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # f16 overflow, by design


def _parts(init_seed):
    sc.manual_seed(init_seed)
    model = MLP(MLPConfig(2, 8, 1, activation="tanh", dropout=0.25))
    opt = Adam(model, lr=0.02)
    return model, opt, Cosine(opt, t_max=30)


def _fit(model, opt, sched, **kw):
    run(
        model,
        MSELoss(),
        opt,
        Batches(XS, YS, 8),
        epochs=3,
        seed=5,
        scheduler=sched,
        determinism_tier="debug",
        log_every=4,
        **kw,
    )


def _plain(x):
    if isinstance(x, Tensor):
        return x.tolist()
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


@pytest.mark.parametrize("precision", [None, {"policy": "mixed_f16", "init_scale": 2.0**20}])
@pytest.mark.parametrize("as_lists", [False, True])
def test_resume_mid_epoch_is_bitwise(precision, as_lists):
    model, opt, sched = _parts(0)
    _fit(model, opt, sched, precision=precision)
    straight = weights(model)

    model, opt, sched = _parts(0)
    ts = TrainState(model, opt, sched, seed=5)
    _fit(model, opt, sched, precision=precision, state=ts, max_steps=9)  # epoch 1, batch 3
    assert (ts.epoch, ts.batch, ts.step) == (1, 3, 9)
    with count_reads("reference") as reads:
        sd = ts.state_dict()
    assert reads == []
    assert sd["rng"]["dropout"]["step"] == 8 and sd["loss_scale"]["scale"] is not None
    sd = _plain(sd) if as_lists else sd

    model, opt, sched = _parts(1)  # other initial weights: all of them come from the state
    _fit(model, opt, sched, precision=precision, resume=sd)
    assert weights(model) == straight


def test_state_is_complete_plain_data():
    model, opt, sched = _parts(0)
    ts = TrainState(model, opt, sched, seed=5)
    _fit(model, opt, sched, state=ts, max_steps=3)
    sd = _plain(ts.state_dict())
    assert set(sd) == {
        "version",
        "seed",
        "epoch",
        "step",
        "batch",
        "model",
        "optimizer",
        "scheduler",
        "loss_scale",
        "rng",
        "early_stopping",
        "metrics",
    }
    assert set(sd["model"]) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert sd["scheduler"]["last_epoch"] == 3 and sd["optimizer"]["step_count"] == 3
    assert sd["rng"]["shuffle"] == {
        "algorithm": "philox4x32",
        "seed": 5,
        "name": "shuffle",
        "step": 0,
        "draw": 0,
    }
    with pytest.raises(sc.ScellisError, match="version"):
        ts.load_state_dict({**sd, "version": 0})


def _values(tree):
    """``tree`` with every tensor leaf read back, lists included."""
    if isinstance(tree, list):
        return [_values(v) for v in tree]
    if isinstance(tree, dict):
        return {k: _values(v) for k, v in tree.items()}
    return _plain(tree)


def _tensors(tree) -> list:
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [t for v in tree.values() for t in _tensors(v)]
    if isinstance(tree, list):
        return [t for v in tree for t in _tensors(v)]
    return []


def test_a_snapshot_keeps_its_values_and_the_live_form_allocates_nothing():
    # a checkpoint reads the live form (nothing trains while it writes); anyone holding
    # state_dict() keeps the values of the moment it was taken
    model, opt, sched = _parts(1)
    ts = TrainState(model, opt, sched, seed=5)
    _fit(model, opt, sched, state=ts, max_steps=2)
    dev = model.parameters()[0].device
    live = ts.state_dict(snapshot=False)
    snap = ts.state_dict()
    before = _values(snap)
    assert _values(live) == before
    owned = {id(p) for p in model.parameters()}
    assert {id(t) for t in _tensors(live["model"])} == owned
    assert not {id(t) for t in _tensors(snap["model"])} & owned
    allocs = dev.memory()["allocs"]
    ts.state_dict(snapshot=False)
    assert dev.memory()["allocs"] == allocs  # the live form makes no buffer
    ts.state_dict()
    assert dev.memory()["allocs"] > allocs
    _fit(model, opt, sched, state=ts, max_steps=4)
    assert _values(snap) == before
    assert _values(ts.state_dict(snapshot=False))["model"] != before["model"]
