"""The async loop: training, events, eval cadence, early stopping, plateau, readbacks."""

import asyncio
import math

import pytest
from trainutil import count_reads, kinds, task, train

import scellis as sc
from scellis.catalog.sched import Cosine, ReduceOnPlateau
from scellis.train import EarlyStopping, fit

LOG_FIELDS = {"step", "epoch", "loss", "lr", "throughput", "skipped", "loss_scale"}


def test_loss_falls_and_events_have_fields(device):
    events, _, _ = train(device, epochs=12, log_every=6)
    logs = kinds(events, "log")
    assert events[0]["kind"] == "start" and events[-1]["kind"] == "end"
    assert all(LOG_FIELDS <= set(e) for e in logs)
    assert [e["step"] for e in logs] == list(range(6, 73, 6))
    assert logs[-1]["loss"] < 0.5 * logs[0]["loss"]
    assert all(e["throughput"] > 0 and e["skipped"] == 0 and e["lr"] == 0.02 for e in logs)
    assert [e["epoch"] for e in kinds(events, "epoch")] == list(range(1, 13))
    end = events[-1]
    assert end["steps"] == 72 and end["epoch"] == 12 and end["loss"] == logs[-1]["loss"]
    assert end["tier"]["name"] == "debug" and end["precision"]["policy"] == "f32"


def test_eval_every_n_steps(device):
    events, _, _ = train(device, epochs=3, log_every=100, eval_every=5, with_val=True)
    evals = kinds(events, "eval")
    assert [e["step"] for e in evals] == [5, 10, 15, 18]  # and the run's last step
    assert all(math.isfinite(e["val_loss"]) for e in evals)


def test_readbacks_only_at_log_and_eval_points(device):
    # 18 steps: logs at 5, 10, 15 and one for the partial window, evals at 6, 12, 18
    with count_reads(device) as reads:
        events, _, _ = train(device, epochs=3, log_every=5, eval_every=6, with_val=True)
    assert len(reads) == 4 + 3 == events[-1]["readbacks"]
    with count_reads(device) as reads:
        events, _, _ = train(device, epochs=3, log_every=1000)
    assert len(reads) == 1 and events[-1]["steps"] == 18  # one summary read for 18 steps


def test_early_stopping_stops():
    es = EarlyStopping(patience=2, min_delta=10.0)  # nothing improves by 10
    events, _, _ = train("reference", epochs=50, eval_every=3, with_val=True, early_stopping=es)
    (stop,) = kinds(events, "early_stop")
    assert stop["step"] == 9 and events[-1]["stopped_early"] and events[-1]["steps"] == 9
    assert [e["bad"] for e in kinds(events, "eval")] == [0, 1, 2]


def test_early_stopping_on_training_loss():
    es = {"patience": 1, "min_delta": 10.0, "metric": "loss"}
    events, _, _ = train("reference", epochs=50, log_every=4, early_stopping=es)
    assert events[-1]["stopped_early"] and events[-1]["steps"] == 8


def test_reduce_on_plateau_lowers_lr():
    model, loss, opt, data, val = task("reference")
    sched = ReduceOnPlateau(opt, patience=1, factor=0.5, threshold=0.9)
    events = []
    sc.train.run(
        model,
        loss,
        opt,
        data,
        epochs=3,
        determinism_tier="prod",
        scheduler=sched,
        val_data=val,
        eval_every=3,
        on_event=events.append,
    )
    evals = kinds(events, "eval")
    assert [e["lr_reduced"] for e in evals] == [False, False, True, False, True, False]
    assert opt.lr == pytest.approx(0.005) and events[-1]["lr"] == opt.lr


def test_step_scheduler_steps_every_step():
    model, loss, opt, data, _ = task("reference")
    sched = Cosine(opt, t_max=12)
    events = []
    sc.train.run(
        model,
        loss,
        opt,
        data,
        epochs=2,
        determinism_tier="prod",
        scheduler=sched,
        log_every=6,
        on_event=events.append,
    )
    want = [0.01 * (1 + math.cos(math.pi * t / 12)) for t in (5, 11)]  # the steps' own rates
    assert [e["lr"] for e in kinds(events, "log")] == pytest.approx(want, abs=1e-15)
    assert opt.lr == pytest.approx(0.0, abs=1e-15)


def test_max_steps_and_grad_clip():
    events, _, _ = train("reference", epochs=10, max_steps=7, grad_clip=0.5, log_every=3)
    assert events[-1]["steps"] == 7 and [e["step"] for e in kinds(events, "log")] == [3, 6, 7]


def test_fit_is_an_async_generator():
    model, loss, opt, data, _ = task("reference")

    async def main():
        return [
            e["kind"]
            async for e in fit(
                model, loss, opt, data, epochs=1, determinism_tier="fast", log_every=3
            )
        ]

    out = asyncio.run(main())
    # fast declares what it does (fused inference forwards): no warning that it does less
    assert out[0] == "start" and "warning" not in out and out.count("log") == 2


def test_plain_iterable_data():
    model, loss, opt, data, _ = task("reference")
    batches = list(data.batches(0, 0))
    events = []
    sc.train.run(
        model,
        loss,
        opt,
        batches,
        epochs=2,
        determinism_tier="debug",
        log_every=6,
        on_event=events.append,
    )
    assert events[-1]["steps"] == 12 and events[0]["steps_per_epoch"] == 6
