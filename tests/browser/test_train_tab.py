"""The example models train in headless Chromium on WebGPU and match the native run.

One page (the session's engine) trains ``examples/lstm_forecaster.sml`` (then the char
Transformer, validating and writing a text sample) for a few steps on the ``prod`` tier;
meanwhile this process trains the same record natively on wgpu (lavapipe) through the
same ``run_api.train``. The browser's per-step losses must agree with the native ones
within ``PROD_TOLERANCE`` (f32), the loss must fall, and the curves the page drew must
be those losses.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from scellis.train import PROD_TOLERANCE

from .conftest import (
    finish_training,
    screenshot,
    start_training,
    train_beside_native,
    wait_engine,
)
from .ui import full_screen

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"
STEPS = 20
# every step has the full batch (no new shapes to compile), no evaluation passes: on
# SwiftShader each new kernel costs seconds, and this keeps the test about kernels' results
OPTIONS = dict(
    max_steps=STEPS, log_every=1, tier="prod", samples=False, validate=False, drop_last=True
)


def native_losses(text: str | None = None, options: dict = OPTIONS) -> list[float]:
    from scellis.webapp import api

    text = EXAMPLE.read_text() if text is None else text
    args = json.dumps({"record_text": text, "device": "webgpu", **options})

    async def go():
        return [ev async for ev in api.dispatch("train", args) if ev["kind"] == "log"]

    return [ev["loss"] for ev in asyncio.run(go())]


def test_lstm_forecaster_trains_in_the_tab_like_native(engine_page):
    page = engine_page
    full_screen(page, False)  # Model View's tests may leave it covering the run panel
    pytest.importorskip("wgpu")
    start_training(page, OPTIONS, "lstm_forecaster")
    # the native run goes in a thread while the tab trains
    native = train_beside_native(page, native_losses, timeout_ms=420_000)
    events = page.evaluate("window.scellisApp.run.events")
    kinds = [e["kind"] for e in events]
    assert kinds[:3] == ["plan", "progress", "start"], kinds[:5]
    assert events[0]["verdict"] in ("green", "yellow")
    assert kinds[-1] == "end"
    browser = [e["loss"] for e in events if e["kind"] == "log"]
    assert [e["step"] for e in events if e["kind"] == "log"] == list(range(1, STEPS + 1))
    assert len(native) == STEPS

    tol = PROD_TOLERANCE["f32"]["dense"]
    worst = max(abs(b - n) / (tol["atol"] + tol["rtol"] * abs(n)) for b, n in zip(browser, native))
    assert worst <= 1.0, f"browser vs native per-step losses: {browser} vs {native}"

    first, last = sum(browser[:5]) / 5, sum(browser[-5:]) / 5
    assert last < 0.75, f"mean loss of the last 5 steps {last:.3f} is above the threshold"
    assert last < 0.7 * first, f"loss fell only from {first:.3f} to {last:.3f}"

    # what the page drew: uPlot's series data are these losses, at these steps
    drawn = page.evaluate(
        "(() => { const p = document.getElementById('run-curves').curves.plots()[0];"
        " return {x: Array.from(p.data[0]), y: Array.from(p.data[1])}; })()"
    )
    assert drawn["x"] == list(range(1, STEPS + 1))
    assert drawn["y"] == pytest.approx(browser, rel=1e-12)
    assert page.inner_text("#run-step") == str(STEPS)
    assert float(page.inner_text("#run-rate")) > 0
    assert page.evaluate("document.getElementById('run-progress-bar').style.width") == "100%"
    assert "memory plan: green" in page.inner_text("#run-plan")
    screenshot(page, "train_lstm_forecaster")


def test_pause_stop_and_forecast_sample(engine_page):
    """Pause holds the run (no step advances), resume continues, stop ends it early;
    the forecast-vs-actual sample is drawn at the end. Runs on the kernels the test
    above compiled."""
    page = engine_page
    full_screen(page, False)  # Model View's tests may leave it covering the run panel
    start_training(page, {**OPTIONS, "samples": True}, "lstm_forecaster")
    page.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'log')", timeout=120_000
    )
    page.click("#run-pause")
    # the step under way (if one is) finishes first; then the engine says it holds
    assert page.inner_text("#run-state") in ("pausing…", "paused")
    page.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'paused')", timeout=120_000
    )
    assert page.inner_text("#run-state") == "paused"
    held = page.evaluate("window.scellisApp.run.events.filter(e => e.kind === 'log').length")
    paused = next(e for e in page.evaluate("window.scellisApp.run.events") if e["kind"] == "paused")
    assert paused["step"] == held  # log_every 1: the steps done are the steps logged
    page.wait_for_timeout(3000)
    after = page.evaluate("window.scellisApp.run.events.filter(e => e.kind === 'log').length")
    assert after == held  # no step while paused
    # headless Chromium never hides a page, so the page is told it is hidden (the
    # property and the event the browser would give it); the handler is the real one
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', {value: 'hidden',"
        " configurable: true}); document.dispatchEvent(new Event('visibilitychange'));"
    )
    assert "training will slow down" in page.inner_text("#banner")
    assert "tab hidden" in page.text_content("#run-log")
    page.evaluate(
        "delete document.visibilityState;"  # the real property again
        " document.dispatchEvent(new Event('visibilitychange'));"
    )
    assert "training will slow down" not in page.inner_text("#banner")
    page.click("#run-pause")  # resume
    page.wait_for_function(
        f"window.scellisApp.run.events.filter(e => e.kind === 'log').length > {after}",
        timeout=60_000,
    )
    page.click("#run-stop")
    finish_training(page, timeout_ms=120_000)
    events = page.evaluate("window.scellisApp.run.events")
    kinds = [e["kind"] for e in events]
    assert "stopped" in kinds and kinds[-1] == "end", kinds
    assert events[-1]["steps"] < STEPS
    sample = [e for e in events if e["kind"] == "sample"]
    assert sample and sample[0]["type"] == "forecast"
    assert len(sample[0]["predicted"]) == len(sample[0]["actual"]) == 32
    assert page.locator("#run-sample svg path").count() == 2
    log = page.text_content("#run-log")
    assert "paused" in log and "resumed" in log and "stopped by the user" in log
    screenshot(page, "pause_stop_sample")


def test_offline_reload_then_train(engine_page):
    """After the first load the service worker has the whole site: with the network
    off the page reloads, the engine starts and the same record trains again, giving
    the same first losses as before (same seed)."""
    page = engine_page
    full_screen(page, False)  # Model View's tests may leave it covering the run panel
    before = [
        e["loss"] for e in page.evaluate("window.scellisApp.run.events") if e["kind"] == "log"
    ]
    assert before, "run the training test first (same session page)"
    page.evaluate("navigator.serviceWorker.ready.then(() => true)")
    page.context.set_offline(True)
    try:
        page.reload()
        wait_engine(page)
        assert page.evaluate("!!navigator.serviceWorker.controller")
        start_training(page, {**OPTIONS, "max_steps": 3}, "lstm_forecaster")
        finish_training(page, timeout_ms=300_000)
        again = [
            e["loss"] for e in page.evaluate("window.scellisApp.run.events") if e["kind"] == "log"
        ]
        assert again == before[:3]
        screenshot(page, "offline_reload_train")
    finally:
        page.context.set_offline(False)


CHAR_STEPS = 4
# a short honest run of the char LM with every part of the dashboard: validation every
# 2 steps on the first 16 windows (one batch), a warmup schedule (a rising LR curve) and
# a 6-char greedy text sample at the end. Measured on SwiftShader under load: the first
# step ~70 s (shader compiles), each further step ~17 s, an evaluation ~5 s, a
# generated character ~3.5 s (one forward of the batch)
CHAR = {
    **OPTIONS, "max_steps": CHAR_STEPS, "validate": True, "eval_every": 2, "val_rows": 16,
    "samples": True, "sample_chars": 6,
}  # fmt: skip
# the example plus what the dashboard shows: the evaluation batch is the training batch
# (its forward kernels are the ones the steps compiled: on SwiftShader each new shape
# costs seconds) and the LR warms up from a quarter of its rate
CHAR_EVAL = "eval: { batch_size: 16, metrics: [accuracy, perplexity, bits_per_char] }"
CHAR_EXTRA = (
    "scheduler: { block_id: training/scheduler/linear_warmup, start_factor: 0.25,"
    " total_iters: 4 }\n"
)


def native_events(text: str, options: dict) -> list[dict]:
    from scellis.webapp import api

    args = json.dumps({"record_text": text, "device": "webgpu", **options})

    async def go():
        return [ev async for ev in api.dispatch("train", args)]

    return asyncio.run(go())


def test_char_transformer_trains_validates_and_writes_in_the_tab_like_native(engine_page):
    """The char Transformer's steps in the tab agree with the native wgpu run within
    PROD_TOLERANCE (training and validation losses), the loss falls, the LR follows the
    schedule, and the dashboard draws both loss series and the LR as the events say and
    shows the text the native engine generates from its own weights with the same
    greedy sampler."""
    page = engine_page
    full_screen(page, False)  # Model View's tests may leave it covering the run panel
    pytest.importorskip("wgpu")
    example = (EXAMPLE.parent / "char_transformer.sml").read_text()
    text = re.sub(r"^eval:.*$", CHAR_EVAL, example, count=1, flags=re.M) + CHAR_EXTRA
    page.evaluate(
        "t => { const app = window.scellisApp; app.record = t;"
        " app.recordName = 'char_transformer'; app.emit('record', t); }",
        text,
    )
    page.evaluate("document.getElementById('run-example').value = 'char_transformer'")
    start_training(page, CHAR)
    native = train_beside_native(page, native_events, text, CHAR, timeout_ms=480_000)
    events = page.evaluate("window.scellisApp.run.events")

    def of(evs, kind, key):
        return [(e["step"], e[key]) for e in evs if e["kind"] == kind]

    logs, nlogs = of(events, "log", "loss"), of(native, "log", "loss")
    vals, nvals = of(events, "eval", "val_loss"), of(native, "eval", "val_loss")
    assert [s for s, _ in logs] == list(range(1, CHAR_STEPS + 1))
    assert [s for s, _ in vals] == [s for s, _ in nvals] == [2, 4]
    tol = PROD_TOLERANCE["f32"]["dense"]
    for (s, b), (_, n) in zip(logs + vals, nlogs + nvals):
        assert abs(b - n) <= tol["atol"] + tol["rtol"] * abs(n), (s, logs, nlogs, vals, nvals)
    assert len(logs + vals) == len(nlogs + nvals)
    browser = [v for _, v in logs]
    assert browser[-1] < browser[0] - 0.3, browser
    assert vals[-1][1] < vals[0][1], vals
    lrs = of(events, "log", "lr")
    assert lrs == of(native, "log", "lr")  # host scalars of the step: exact
    base = 3.0e-3
    assert [lr for _, lr in lrs] == pytest.approx(
        [base * (0.25 + 0.75 * (s - 1) / 4) for s in range(1, CHAR_STEPS + 1)], rel=1e-12
    )

    # the text sample: the browser's greedy continuations are the native ones, for
    # every prompt of the batch (after 4 steps most are spaces; a few are not)
    sample = [e for e in events if e["kind"] == "sample"]
    nsample = [e for e in native if e["kind"] == "sample"]
    assert len(sample) == len(nsample) == 1 and sample[0]["type"] == "text"
    rows = sample[0]["rows"]
    assert rows == nsample[0]["rows"], (rows, nsample[0]["rows"])
    assert len(rows) == 16 and all(len(r["generated"]) == 6 for r in rows)
    assert len({r["generated"] for r in rows}) > 1  # not one string for every prompt

    # what the dashboard drew: train and validation loss on one chart, the LR on another
    drawn = page.evaluate(
        "(() => { const [l, r] = document.getElementById('run-curves').curves.plots();"
        " const a = (v) => Array.from(v, (x) => (x == null ? null : x));"
        " return {x: a(l.data[0]), loss: a(l.data[1]), val: a(l.data[2]),"
        " lrx: a(r.data[0]), lr: a(r.data[1]),"
        " labels: l.series.slice(1).map((s) => s.label)}; })()"
    )
    steps = list(range(1, CHAR_STEPS + 1))
    assert drawn["x"] == drawn["lrx"] == steps
    assert drawn["labels"] == ["train", "validation"]
    assert drawn["loss"] == pytest.approx(browser, rel=1e-12)
    assert drawn["val"] == [dict(vals).get(s) for s in steps]
    assert drawn["lr"] == [lr for _, lr in lrs]
    assert page.inner_text("#run-val") == f"{vals[-1][1]:.4f}"
    shown = page.eval_on_selector_all(
        "#run-sample pre",
        "ps => ps.map(p => [p.querySelector('.prompt').textContent,"
        " p.querySelector('.generated').textContent])",
    )
    assert shown == [[r["prompt"], r["generated"]] for r in rows[:4]]
    assert "greedy" in page.inner_text("#run-sample h3")
    screenshot(page, "train_char_transformer")
