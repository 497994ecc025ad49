"""The validation curve across a detach, a closed window and a resume: a run that
validates every other step moves to its own window (the tab's Detach), the window
trains and validates, closes mid-run, and the tab resumes the interrupted run. The
chart's validation points (what uPlot draws) are in increasing step order with no step
twice, and they are the uninterrupted run's (same device and seed: bitwise)."""

from __future__ import annotations

import pytest

from .conftest import finish_training, open_engine_page, screenshot, start_training, wait_engine
from .test_run_window import STEP_MS, _detach, _done

pytestmark = pytest.mark.browser

OPTIONS = dict(
    max_steps=14, log_every=1, eval_every=2, validate=True, samples=False, checkpoint_every=2,
    tier="prod",
)  # fmt: skip
DRAWN = "document.querySelector('#run-curves').curves.plots()[0].data"


@pytest.fixture(scope="module")
def page(contexts, site_url):
    return open_engine_page(contexts, site_url, viewport={"width": 1280, "height": 900})[2]


def val_points(page) -> list[tuple[int, float]]:
    """The validation series as the loss chart holds it: (step, value) in array order."""
    steps, _, val = page.evaluate(DRAWN)
    return [(s, v) for s, v in zip(steps, val) if v is not None]


def test_validation_points_stay_in_step_order_after_detach_close_and_resume(page):
    start_training(page, OPTIONS, "lstm_forecaster")
    finish_training(page, timeout_ms=STEP_MS)
    oracle = val_points(page)
    assert [s for s, _ in oracle] == list(range(2, 15, 2))
    start_training(page, OPTIONS, "lstm_forecaster")
    page.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'eval')", timeout=STEP_MS, polling=500
    )
    page.click("#run-pause")
    win, wlog = _detach(page)
    wait_engine(win, wlog)
    # the window validates and writes a checkpoint of its own before it is closed
    win.wait_for_function(
        "(() => { const ev = window.scellisApp.run.events;"
        " const k = ev[0] && ev[0].kind === 'resume' ? ev[0].step : null;"
        " return k !== null && ev.some(e => e.kind === 'eval' && e.step > k)"
        " && ev.some(e => e.kind === 'checkpoint' && e.step > k); })()",
        timeout=STEP_MS, polling=500,
    )  # fmt: skip
    win.click("#run-pause")
    win.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'paused')", timeout=STEP_MS
    )
    assert win.inner_text("#run-state") == "paused"  # the engine holds: its checkpoint is flushed
    there = win.evaluate("window.scellisApp.run.events")
    assert there[-1]["kind"] != "end", "the window's run ended before it was closed"
    rid = there[0]["run"]
    win.close()
    page.wait_for_function(
        "window.scellisApp.run.detach.phase === null", timeout=120_000, polling=500
    )
    sel = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'interrupted'", timeout=60_000
    )
    page.locator("#banner [data-key='detach-closed'] button", has_text="Resume").click()
    again = _done(page)
    assert again[0]["kind"] == "resume" and again[0]["run"] == rid
    drawn = val_points(page)
    steps = [s for s, _ in drawn]
    assert steps == sorted(set(steps)), steps  # increasing, no step twice
    assert drawn == oracle, (drawn, oracle)
    # the step axis itself: increasing, each step once (uPlot draws in array order)
    axis = page.evaluate(DRAWN)[0]
    assert axis == sorted(set(axis)) and axis == list(range(1, 15))
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)
        page.locator("#run-curves").scroll_into_view_if_needed()
        screenshot(page, f"detach_resume_validation_{width}")
