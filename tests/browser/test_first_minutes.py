"""A newcomer's first minutes in the tab: a first path on the first screen, a short run
by default, a memory plan that follows the record, and nothing of an earlier run or
record left on show (counters, curves, plan verdicts, the run list, imports).

One fresh page (its own profile, so the run list starts empty) serves the module.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from .conftest import finish_training, screenshot, start_training, wait_engine, watch
from .ui import set_record

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
# a record whose embedding table alone is gigabytes: the plan must refuse it
HUGE = (
    (ROOT / "examples" / "char_transformer.sml")
    .read_text()
    .replace("num_embeddings: 88", "num_embeddings: 40000000")
)
QUICK = dict(max_steps=3, log_every=1, eval_every=2, checkpoint_every=3, samples=True)


@pytest.fixture(scope="module")
def fresh(contexts, site_url):
    """A page on a new profile, whose every response status is kept in ``page.statuses``."""
    statuses: list[tuple[int, str]] = []
    ctx, _profile = contexts.new()
    ctx.on("response", lambda r: statuses.append((r.status, r.url)))
    page = ctx.new_page()
    page.set_viewport_size({"width": 1440, "height": 900})
    log: list[str] = []
    watch(page, log)
    page.goto(site_url)
    wait_engine(page, log)
    page.console_log, page.statuses = log, statuses
    return page


def plan_verdict(page, want: str, timeout: int = 120_000) -> str:
    page.wait_for_function(
        "v => document.getElementById('run-plan').dataset.verdict === v", arg=want, timeout=timeout
    )
    return page.inner_text("#run-plan")


def test_first_screen_shows_the_first_path_and_a_quick_run(fresh, site_url):
    page = fresh
    start = page.locator("#start-here")
    assert start.is_visible()
    text = start.inner_text()
    assert "Pick an example" in text and "Press Train" in text and "drop a CSV" in text
    # the example picker is in the first strip, above the panels
    assert page.locator("#start-here #run-example").count() == 1
    # a short first run: the run length and validation cadence are set and shown
    assert int(page.input_value("#run-max-steps")) <= 100
    assert int(page.input_value("#run-eval-every")) <= 20
    # the plan is there before Train, for the record on screen
    plan = plan_verdict(page, "green")
    assert "memory plan: green" in plan and "MiB" in plan
    # the page's own files all load: the favicon too
    missing = [u for s, u in page.statuses if s >= 400]
    assert not missing, missing
    assert page.evaluate(
        "fetch('favicon.svg').then(r => r.ok && r.headers.get('content-type').includes('svg'))"
    )
    # no developer timing in Model View's header (it is kept for tests, as data)
    assert "ms (p50" not in page.inner_text("#model-view .mv-bar")
    assert "No runs yet" in page.inner_text("#runs-table")
    assert page.locator("#runs-import-button").evaluate("b => b.tagName") == "BUTTON"
    screenshot(page, "first_screen")


def test_the_plan_follows_the_record_and_speaks_in_human_units(fresh):
    page = fresh
    set_record(page, HUGE)
    # the old verdict goes at once, before the new plan is back
    assert page.get_attribute("#run-plan", "data-verdict") in ("pending", "red")
    plan = plan_verdict(page, "red")
    assert "GiB" in plan, plan
    assert not any(len(w.split(".")[0]) > 4 for w in plan.split() if w[:1].isdigit()), plan
    assert "no batch size fits" not in plan
    screenshot(page, "plan_red_live")
    # Train refuses it; the banner points at the plan box rather than repeating it
    start_training(page, {"max_steps": 1})
    page.wait_for_function("window._run !== null", timeout=120_000)
    banner = page.inner_text("#banner")
    assert "memory plan is red" in banner and "GiB" not in banner, banner
    set_record(page, LSTM)
    plan_verdict(page, "green")


def test_a_run_then_another_example_leaves_nothing_stale(fresh):
    page = fresh
    start_training(page, QUICK, "lstm_forecaster")
    # the run list shows the new run while it trains
    page.wait_for_function(
        "window.scellisApp.run.runs.list.some(r => r.status === 'running')", timeout=180_000
    )
    finish_training(page, timeout_ms=300_000)
    assert page.inner_text("#run-step") == "3"
    assert page.inner_text("#run-val") != "–"
    rid = page.evaluate("window.scellisApp.run.runId")
    row = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_selector(f"{row}[data-status='done']", timeout=30_000)
    # the finished run's picker offers its last checkpoint
    picks = page.eval_on_selector_all(f"{row} .run-from option", "os => os.map(o => o.value)")
    assert "3" in picks, picks
    screenshot(page, "after_quick_run")

    page.select_option("#run-example", "char_transformer")
    page.wait_for_function("window.scellisApp.recordName === 'char_transformer'")
    # its quick run: fewer, costlier steps, validated early on its first rows
    assert page.input_value("#run-max-steps") == "15"
    assert page.input_value("#run-val-rows") == "32"
    assert page.inner_text("#run-step") == "0"
    for sel in ("#run-val", "#run-loss", "#run-rate", "#run-eta"):
        assert page.inner_text(sel) == "–", sel
    assert page.inner_text("#run-metrics") == ""
    assert page.inner_text("#run-sample") == ""
    assert page.evaluate("document.getElementById('run-curves').curves.data().steps") == []
    plan_verdict(page, "green")
    screenshot(page, "switched_example")

    # importing the bundle of a run the list has already: said plainly, nothing thrown
    b64 = page.evaluate(
        "id => window.scellisClient.call('export_run', {run: id, store: '/scellis/store'})", rid
    )
    errors_before = [x for x in page.console_log if x.startswith(("pageerror", "error"))]
    tar = {"name": "again.tar", "mimeType": "application/x-tar", "buffer": base64.b64decode(b64)}
    page.set_input_files("#runs-import", files=[tar])
    page.wait_for_selector("#runs-message.runs-error", timeout=60_000)
    assert "already in this tab's run list" in page.inner_text("#runs-message")
    errors = [x for x in page.console_log if x.startswith(("pageerror", "error"))]
    assert errors == errors_before, errors
    screenshot(page, "import_existing_run")


def test_resume_after_pause_does_not_count_the_pause(fresh):
    page = fresh
    start_training(page, {"max_steps": 8, "log_every": 1, "validate": False,
                          "samples": False}, "lstm_forecaster")  # fmt: skip
    page.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'log')", timeout=180_000
    )
    page.click("#run-pause")
    page.wait_for_timeout(3000)
    resumed = page.evaluate("performance.now()")
    page.click("#run-pause")
    finish_training(page, timeout_ms=300_000)
    marks = page.evaluate("window.scellisApp.run.marks")
    assert marks and all(t >= resumed for _s, t in marks), (marks, resumed)
    assert page.evaluate("window.scellisApp.run.t0") >= resumed


def test_eta_rounds_whole_seconds():
    show = ROOT / "web" / "src" / "run" / "show.js"
    code = (
        f"import {{ fmtTime, humanBytes }} from {json.dumps(show.as_uri())};"
        "console.log(JSON.stringify([fmtTime(1979.6), fmtTime(59.7), fmtTime(7260),"
        " humanBytes(6553610.8 * 2 ** 20), humanBytes(512)]));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", code], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == ["33m00s", "1m00s", "2h01m", "6.25 TiB", "512 B"]
