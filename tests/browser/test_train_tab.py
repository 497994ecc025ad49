"""The LSTM forecaster trains in headless Chromium on WebGPU and matches the native run.

One page (the session's engine) trains ``examples/lstm_forecaster.sml`` for a few
steps on the ``prod`` tier; meanwhile this process trains the same record natively
on wgpu (lavapipe) through the same ``run_api.train``. The browser's per-step losses
must agree with the native ones within ``PROD_TOLERANCE`` (f32), the loss must fall
below a threshold, and the curve the page drew must be those losses.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scellis.train import PROD_TOLERANCE

from .conftest import finish_training, screenshot, start_training, wait_engine

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"
STEPS = 20
# every step has the full batch (no new shapes to compile), no evaluation passes: on
# SwiftShader each new kernel costs seconds, and this keeps the test about kernels' results
OPTIONS = dict(
    max_steps=STEPS, log_every=1, tier="prod", samples=False, validate=False, drop_last=True
)


def native_losses() -> list[float]:
    from scellis.webapp import api

    args = json.dumps({"record_text": EXAMPLE.read_text(), "device": "webgpu", **OPTIONS})

    async def go():
        return [ev async for ev in api.dispatch("train", args) if ev["kind"] == "log"]

    return [ev["loss"] for ev in asyncio.run(go())]


def test_lstm_forecaster_trains_in_the_tab_like_native(engine_page):
    page = engine_page
    pytest.importorskip("wgpu")
    start_training(page, OPTIONS, "lstm_forecaster")
    # the native run goes in a thread (Playwright's sync API owns this thread's event
    # loop) while the tab trains
    with ThreadPoolExecutor(1) as pool:
        native_job = pool.submit(native_losses)
        finish_training(page, timeout_ms=420_000)
        native = native_job.result()
    events = page.evaluate("window.scellisApp.run.events")
    kinds = [e["kind"] for e in events]
    assert kinds[:3] == ["plan", "progress", "start"], kinds[:5]
    assert events[0]["verdict"] in ("green", "yellow")
    assert kinds[-1] == "end"
    browser = [e["loss"] for e in events if e["kind"] == "log"]
    assert [e["step"] for e in events if e["kind"] == "log"] == list(range(1, STEPS + 1))
    assert len(native) == STEPS

    tol = PROD_TOLERANCE["f32"]
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


def test_offline_reload_then_train(engine_page):
    """After the first load the service worker has the whole site: with the network
    off the page reloads, the engine starts and the same record trains again, giving
    the same first losses as before (same seed)."""
    page = engine_page
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
