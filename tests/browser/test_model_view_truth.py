"""Model View and the run panel tell the truth after every edit, in headless Chromium.

A quick run is announced from a measured warm step and takes about what it said; its
ETA moves steadily. The run then reopens in Model View with its trained weights and
trains on from them. An edit typed in the code view moves the memory plan and Train's
validity at once; a widened block offers the one-click mend of the block reading it.
A horizon typed in the code view is followed by the head and the comments, and the
sample chart of the next run names it, on labelled axes.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from .conftest import finish_training, open_engine_page, screenshot, start_training
from .ui import full_screen, set_record

pytestmark = pytest.mark.browser

LSTM = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()
RUN_MS = 300_000
SIZES = ({"width": 1440, "height": 900}, {"width": 1024, "height": 720})


@pytest.fixture(scope="module")
def page(contexts, site_url):
    page = open_engine_page(contexts, site_url, viewport=SIZES[0])[2]
    yield page
    full_screen(page, False)
    show_tab(page, "graph")  # as the shared page's tests expect


def show_tab(page, name: str) -> None:
    """Model View's ``name`` view (full screen shows all three: no tab to click)."""
    tab = page.locator(f"#model-view [data-tab='{name}']")
    if tab.is_visible():
        tab.click()


def shots(page, name: str) -> None:
    for size in SIZES:
        page.set_viewport_size(size)
        screenshot(page, f"{name}_{size['width']}")
    page.set_viewport_size(SIZES[0])


def code_text(page) -> str:
    return page.evaluate("window.scellisApp.modelView.code.text")


def type_in_code(page, line_has: str, old: str, new: str) -> None:
    """Click the code line holding ``line_has``, delete ``old`` after its key, type ``new``."""
    show_tab(page, "code")
    line = page.locator(".cm-line", has_text=line_has).first
    line.click()
    page.keyboard.press("End")
    text = line.text_content()
    # from the line's end (Home stops at the indentation) to just after ``old``
    for _ in range(len(text) - text.index(line_has) - len(line_has)):
        page.keyboard.press("ArrowLeft")
    for _ in range(len(old)):
        page.keyboard.press("Backspace")
    page.keyboard.type(new)


def settled(page, needle: str) -> None:
    """Until the worker's projection holds ``needle`` and the code view shows it."""
    try:
        page.wait_for_function(
            "s => { const mv = window.scellisApp.modelView; return mv.result"
            " && mv.result.text.includes(s) && mv.code.text === mv.result.text"
            " && !document.querySelector('#model-view').dataset.busy; }",
            arg=needle,
            timeout=60_000,
        )
    except Exception:
        pytest.fail(f"{needle!r} never projected; the code view shows:\n{code_text(page)}")


def plan_verdict(page, verdict: str) -> None:
    page.wait_for_function(
        "v => document.getElementById('run-plan').dataset.verdict === v",
        arg=verdict,
        timeout=120_000,
    )


def test_the_quick_run_takes_about_the_time_it_announced(page):
    full_screen(page, False)
    page.evaluate("window.scellisApp.quickRun.target_s = 12")
    page.evaluate("window.scellisApp.quickRun.per_step = null")  # as on a first visit
    page.evaluate(
        "window._etas = []; window.scellisApp.on('run-event', e => { if (e.kind === 'log')"
        " window._etas.push(document.getElementById('run-eta').textContent); });"
        "window._run = null; window.scellisApp.run.trainSized().then("
        "r => { window._run = {ok: r}; }, e => { window._run = {err: e.message}; })"
    )
    finish_training(page, RUN_MS)
    q = page.evaluate("window.scellisApp.quickRun")
    lo, hi = q["last"]["range"]
    hint = page.inner_text("#run-hint")
    assert f"quick run: {q['steps']} steps, about {lo}–{hi} s on this GPU" in hint, hint
    assert "a warm step, measured" in hint
    # the calibration's warm step leaves out the first (compiling) step
    assert 0 < q["timed"]["step"] < q["last"]["seconds"]
    actual, said = q["last"]["actual_s"], q["last"]["seconds"]
    assert q["last"]["steps"] == q["steps"]
    print(f"quick run of {q['steps']} steps: said {lo}-{hi} s, took {actual:.1f} s")
    assert said / 2 < actual < said * 2, (actual, said, q)
    # the ETA shown at each step after the first few moves one way, without wild swings
    etas = [e for e in page.evaluate("window._etas") if e != "–"]
    secs = [int(m[0] or 0) * 60 + int(m[1]) for m in (re.fullmatch(r"(?:(\d+)m)?(\d+)s", e).groups()
                                                      for e in etas)]  # fmt: skip
    assert len(secs) >= 3, etas
    jumps = [b - a for a, b in zip(secs[2:], secs[3:])]
    assert all(j <= max(3, 0.5 * a) for j, a in zip(jumps, secs[2:])), etas
    shots(page, "truth_quick_run")


def test_a_trained_run_reopens_in_model_view_and_trains_on_from_its_weights(page):
    events = page.evaluate("window.scellisApp.run.events")
    fresh_first = next(e["loss"] for e in events if e["kind"] == "log")
    trained_last = [e["loss"] for e in events if e["kind"] == "log"][-1]
    page.click("#runs-table tbody tr:first-child .run-open")
    page.click(".past-edit")
    page.wait_for_function("window.scellisApp.record.startsWith('# reopened from run')")
    settled(page, "# reopened from run")
    assert page.evaluate("window.scellisApp.recordName").startswith("imported:run ")
    assert page.locator(".import-finetune").is_visible()  # the fine-tune choice is offered
    assert "Model View with its weights from step" in page.inner_text("#runs-message")
    # editable: a form edit reaches the record
    lr = round(random.Random().uniform(0.001, 0.009), 4)
    show_tab(page, "form")
    page.fill("#mv-f-optimizer-lr", str(lr))
    page.keyboard.press("Tab")
    settled(page, f"lr: {lr}")
    assert not page.is_disabled("#run-train")
    shots(page, "truth_reopened_run")
    start_training(page, {"max_steps": 2, "log_every": 1, "eval_every": 2, "samples": False})
    finish_training(page, RUN_MS)
    again = page.evaluate("window.scellisApp.run.events")
    first = next(e["loss"] for e in again if e["kind"] == "log")
    # from the trained weights: the first loss is the trained run's, not a fresh model's
    assert abs(first - trained_last) < abs(fresh_first - trained_last), (
        first, trained_last, fresh_first)  # fmt: skip
    page.click(".past-close")
    page.select_option("#run-example", "lstm_forecaster")  # an example again, as a user would
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")
    assert page.inner_text("#runs-message") == ""  # the line was about the reopened run


def test_code_edits_move_the_plan_and_trains_validity_and_a_width_offers_its_mend(page):
    full_screen(page, False)  # the run panel in view beside Model View
    set_record(page, LSTM)
    plan_verdict(page, "green")
    # typed in the code view: a 6.4-billion-parameter LSTM whose head no longer fits
    type_in_code(page, "hidden_size: 32", "32", "40000")
    settled(page, "hidden_size: 40000")
    page.wait_for_function("document.getElementById('run-train').disabled")
    why = page.inner_text("#run-blocked")
    assert "Train waits for a valid record" in why and "shape mismatch" in why, why
    assert "shape mismatch" in page.get_attribute("#run-train", "title")
    fix = page.locator(".mv-problems .mv-fix")
    assert fix.inner_text() == "Fix: set head.in_features: 40000"
    shots(page, "truth_invalid_code_edit")
    fix.click()
    settled(page, "in_features: 40000")
    page.wait_for_function("!document.getElementById('run-train').disabled")
    assert page.locator("#run-blocked").is_hidden()
    plan_verdict(page, "red")  # the plan followed the code edit, before any Train
    assert re.search(r"[GT]iB", page.inner_text("#run-plan")), page.inner_text("#run-plan")
    shots(page, "truth_red_plan_after_code_edit")
    # and back, typed again: green once more
    type_in_code(page, "hidden_size: 40000", "40000", "32")
    type_in_code(page, "in_features: 40000", "40000", "32")
    settled(page, "in_features: 32")
    plan_verdict(page, "green")
    show_tab(page, "graph")


def test_a_horizon_typed_in_code_is_followed_by_the_head_comments_and_charts(page):
    full_screen(page, False)
    set_record(page, LSTM)
    horizon = random.Random().randrange(2, 7)
    type_in_code(page, "horizon: 1", "1", str(horizon))
    # the head and the comments follow, as a data-panel change makes them
    settled(page, f"the next {horizon} years out")
    text = code_text(page)
    assert f"n_outputs: {horizon}        # {horizon} years ahead" in text
    assert "one year ahead" not in text and "# input length in years" in text
    page.wait_for_function(
        "h => (window.scellisApp.labels || {}).horizon === h", arg=horizon, timeout=60_000
    )
    show_tab(page, "graph")
    start_training(page, {"max_steps": 3, "log_every": 1, "eval_every": 3, "samples": True})
    finish_training(page, RUN_MS)
    title = page.inner_text("#run-sample h3")
    assert title.startswith("sunspots: forecast vs actual") and f"{horizon}-year horizon" in title
    assert page.text_content("#run-sample .fc-ylabel") == "sunspots"
    assert page.text_content("#run-sample .fc-xlabel") == "years since the series' first row"
    assert page.locator("#run-sample .fc-xtick").count() >= 2
    assert page.locator("#run-sample .fc-ytick").count() >= 2
    page.locator("#run-sample").scroll_into_view_if_needed()
    shots(page, "truth_sample_chart")
