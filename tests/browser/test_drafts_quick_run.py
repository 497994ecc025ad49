"""A newcomer's record and quick run across a reload: an edit in the form comes back
after the page reloads, with a note that offers to discard it; the quick run is sized
from a timed warm step on this GPU to a target time, says so, and keeps the run's own
measurement for the next visit."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from .conftest import open_engine_page, screenshot, wait_engine

pytestmark = pytest.mark.browser

LSTM = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()
STEP_MS = 300_000


@pytest.fixture(scope="module")
def page(contexts, site_url):
    page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})[2]
    return page


def _reload(page):
    page.reload()
    wait_engine(page, page.console_log)
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")


def test_an_edited_record_survives_a_reload_until_discarded(page):
    # a width other than the example's own: that one would leave no draft to keep
    own = int(re.search(r"hidden_size: (\d+)", LSTM).group(1))
    size = random.Random().choice([n for n in range(9, 60) if n != own])
    page.click("#model-view [data-tab='form']")
    page.fill("#mv-f-lstm-hidden_size", str(size))
    page.keyboard.press("Tab")
    page.wait_for_function(
        "n => window.scellisApp.record.includes(`hidden_size: ${n}`)", arg=size, timeout=60_000
    )
    # the draft is kept once the edit has reached the page's storage: reload after that
    page.wait_for_function(
        "n => (localStorage.getItem('scellis-draft:lstm_forecaster') || '')"
        ".includes(`hidden_size: ${n}`)",
        arg=size, timeout=60_000,
    )  # fmt: skip
    _reload(page)
    note = page.locator("#draft-note")
    note.wait_for(state="visible", timeout=60_000)
    assert "restored your draft of lstm_forecaster" in note.inner_text()
    edited = page.evaluate("window.scellisApp.record")
    assert f"hidden_size: {size}" in edited and edited != LSTM
    page.click("#model-view [data-tab='form']")
    page.wait_for_function(
        "n => document.querySelector('#mv-f-lstm-hidden_size')?.value === String(n)", arg=size
    )
    screenshot(page, "restored_draft")
    page.click("#draft-note .draft-discard")
    assert page.evaluate("window.scellisApp.record") == LSTM
    assert note.is_hidden()
    _reload(page)
    assert page.evaluate("window.scellisApp.record") == LSTM
    assert page.locator("#draft-note").is_hidden()


def test_the_quick_run_is_sized_to_this_gpu_and_says_so(page):
    page.evaluate("window.scellisApp.quickRun.target_s = 6")
    page.evaluate("window.scellisApp.quickRun.per_step = null")  # as on a first visit
    page.evaluate(
        "window._run = null; window.scellisApp.run.trainSized().then("
        "r => { window._run = {ok: r}; }, e => { window._run = {err: e.message}; })"
    )
    page.wait_for_function("window._run !== null", timeout=STEP_MS, polling=1000)
    q = page.evaluate("window.scellisApp.quickRun")
    timed = q["timed"]  # the calibration's warm step, validation and start-up (s)
    budget = 6 - timed["start"] - 3 * timed["eval"]
    steps = max(3, round(budget / timed["step"]))
    assert q["steps"] == steps and page.input_value("#run-max-steps") == str(steps)
    lo, hi = q["last"]["range"]
    hint = page.inner_text("#run-hint")
    assert f"quick run: {steps} steps, about {lo}–{hi} s on this GPU" in hint, hint
    assert f"the last one took {round(q['last']['actual_s'])} s" in hint
    end = next(e for e in page.evaluate("window.scellisApp.run.events") if e["kind"] == "end")
    assert end["steps"] == steps
    screenshot(page, "sized_quick_run")
    # the next visit is sized at once, from the run's own warm step
    learned = q["per_step"]
    assert learned > 0 and learned != timed["step"]
    _reload(page)
    page.wait_for_function("window.scellisApp.quickRun.per_step !== null", timeout=30_000)
    again = page.evaluate("window.scellisApp.quickRun")
    assert abs(again["per_step"] - learned) < 1e-9
    assert "quick run: " in page.inner_text("#run-hint")
