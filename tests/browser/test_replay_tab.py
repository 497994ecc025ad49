"""Schedule replay is a correct option in the tab: the seed-size LSTM (hidden 8 on
[32, 5, 1] windows, test_seed_lstm_tab.py's record) trained with ``replay`` gives the
very losses of the eager run in the same tab, and most of its steps really replayed.

The oracle is the eager tab run: the replayed schedule runs the same kernels on the
same buffers in the same order, so the per-step losses must be equal bit for bit (a
float equality, not a tolerance). The ``end`` event's replay record must show replayed
steps, so a replay option that the tab ignored could not pass. tabbench's replayed
train step is checked the same way against its eager one.
"""

from __future__ import annotations

import pytest

from .conftest import finish_training, start_training
from .test_seed_lstm_tab import SEED_OPTIONS, STEPS, seed_record
from .ui import full_screen, set_record

pytestmark = pytest.mark.browser


def _run(page, options: dict) -> tuple[list[float], dict]:
    start_training(page, options)
    finish_training(page, timeout_ms=420_000)
    events = page.evaluate("window.scellisApp.run.events")
    assert events[-1]["kind"] == "end", [e["kind"] for e in events][-5:]
    logs = [e for e in events if e["kind"] == "log"]
    assert [e["step"] for e in logs] == list(range(1, STEPS + 1))
    return [e["loss"] for e in logs], events[-1]


def test_replayed_seed_lstm_matches_eager_in_the_tab(engine_page):
    page = engine_page
    full_screen(page, False)  # Model View's tests may leave it covering the run panel
    set_record(page, seed_record())
    eager, end_eager = _run(page, {**SEED_OPTIONS, "replay": False})
    replayed, end = _run(page, SEED_OPTIONS)  # the tab replays by default
    assert end_eager.get("replay") is None, end_eager
    rec = end["replay"]
    # 1 warm-up + 2 recorded eager steps, then the schedule (drop_last: one batch shape)
    assert rec["replayed_steps"] == STEPS - 3, rec
    assert rec["eager_steps"] == 3, rec
    assert len(set(eager)) > 1, eager  # a run that trains, not one repeated value
    assert replayed == eager, list(zip(eager, replayed))


def test_bench_train_step_replay_matches_eager_in_the_tab(engine_page):
    call = "(o) => window.scellisClient.call('bench_train_step', o)"
    args = {"model": "seed_lstm", "steps": 3, "repeats": 2, "warmup": 3}
    eager = engine_page.evaluate(call, args)
    rep = engine_page.evaluate(call, {**args, "replay": True})
    assert rep["impl"] == "scellis-webgpu-replay" and eager["impl"] == "scellis-webgpu"
    assert rep["replayed_steps"] == 6, rep
    # the replayed dispatches went to the GPU a stretch at a time, one JavaScript call each
    assert 0 < rep["batched_dispatches"] <= rep["dispatches_per_step"], rep
    assert rep["first_loss"] == eager["first_loss"]
    assert rep["last_loss"] == eager["last_loss"], (eager, rep)
    assert rep["last_loss"] != rep["first_loss"]  # 9 Adam steps moved the loss
    # bad input is a clear message, not a traceback
    with pytest.raises(Exception, match="model must be one of"):
        engine_page.evaluate(call, {"model": "nope"})


def test_the_replay_box_makes_the_train_button_replay(engine_page):
    """The run panel's "replay step" box is what a user has: Train with it ticked runs
    the record replayed (the end event's summary counts replayed steps), unticked eager,
    and both give the same losses."""
    page = engine_page
    full_screen(page, False)
    record = seed_record().replace("epochs: 60", "epochs: 1")  # one epoch, a short run
    assert record != seed_record()
    set_record(page, record)

    def click_train(replay: bool) -> tuple[list[float], dict]:
        # a max steps the user typed: the quick run, sized by each run's measured speed,
        # would give the faster replayed run more steps than the eager one
        page.fill('[data-option="max_steps"]', "7")
        page.set_checked("#run-replay", replay)
        page.click("#run-train")
        page.wait_for_function(
            "(() => { const ev = window.scellisApp.run.events;"
            " return ev.length && ev[ev.length - 1].kind === 'end'"
            " && !window.scellisApp.run.running; })()",
            timeout=300_000, polling=250,
        )  # fmt: skip
        events = page.evaluate("window.scellisApp.run.events")
        return [e["loss"] for e in events if e["kind"] == "log"], events[-1]

    replayed, end = click_train(True)
    assert end.get("replay") and end["replay"]["replayed_steps"] >= 1, end
    eager, end = click_train(False)
    assert end.get("replay") is None
    assert replayed == eager and len(eager) >= 2
