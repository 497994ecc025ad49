"""The tab names the data actually pinned: a weekly CSV whose column is ``load_mw``,
pinned on the sunspots example, makes every label that named sunspots and years name
load_mw and weeks (start strip, data panel, record comments, metrics, the sample chart,
the forecast chart and its horizon). Screenshots at 412, 1024 and 1440 px wide."""

from __future__ import annotations

import random
import re
from datetime import date, timedelta

import pytest

from scellis.data.frequency import frequency

from .conftest import (
    finish_training,
    open_engine_page,
    screenshot,
    start_training,
)

pytestmark = pytest.mark.browser

STEP_MS = 300_000
OLD_WORDS = re.compile(r"sunspot|\byears?\b|yearly", re.I)


@pytest.fixture(scope="module")
def page(contexts, site_url):
    page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})[2]
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")
    return page


def weekly_csv(rng: random.Random, n: int = 160) -> tuple[str, list[date]]:
    start = date(rng.randrange(2000, 2020), rng.randrange(1, 13), rng.randrange(1, 28))
    days = [start + timedelta(weeks=i) for i in range(n)]
    rows = ["date,load_mw"] + [f"{d},{rng.uniform(300, 900):.2f}" for d in days]
    return "\n".join(rows) + "\n", days


def shown_text(page) -> str:
    """What a user reads in the start strip (the picked example), the data and run
    panels, and the record's comments."""
    return page.evaluate(
        "() => { const strip = document.querySelector('#start-here').cloneNode(true);"
        " for (const o of strip.querySelectorAll('option')) if (!o.selected) o.remove();"
        " const run = document.querySelector('#run-panel').cloneNode(true);"
        " run.querySelector('#run-log-box').remove();"
        " const notes = window.scellisApp.record.split('\\n').filter(l => /(^|\\s)#/.test(l));"
        " return [strip.textContent, document.querySelector('#data-panel').innerText,"
        " run.textContent, ...notes].join('\\n'); }"
    )


def test_labels_follow_a_weekly_load_file(page):
    text, days = weekly_csv(random.Random())
    # the oracle of the spacing: the calendar the rows were made from
    from datetime import datetime

    assert frequency([datetime(d.year, d.month, d.day) for d in days])["name"] == "weekly"
    before = page.inner_text("#run-example option:checked")
    assert "sunspots" in before  # the example's own data, named as before
    page.set_input_files(
        ".dp-file", files=[{"name": "load.csv", "mimeType": "text/csv", "buffer": text.encode()}]
    )
    page.locator(".dp-loaded").wait_for(state="visible", timeout=60_000)
    assert page.input_value(".dp-value") == "load_mw" and page.input_value(".dp-time") == "date"
    assert page.text_content(".dp-freq") == f"weekly, {days[0]} to {days[-1]}"
    assert page.eval_on_selector_all(".dp-unit", "us => us.map(u => u.textContent)") == [
        "(weeks)", "(weeks)",
    ]  # fmt: skip
    page.click(".dp-use")
    page.wait_for_function(
        "window.scellisApp.labels && window.scellisApp.labels.target === 'load_mw'",
        timeout=60_000,
    )
    assert page.inner_text("#run-example option:checked") == "LSTM forecaster (load_mw, weekly)"
    current = page.text_content(".dp-current")
    assert "weekly" in current and "window 20 weeks" in current and "horizon 1 week" in current
    start_training(page, dict(max_steps=8, log_every=1, eval_every=4, samples=True))
    finish_training(page, timeout_ms=STEP_MS)
    metrics = page.inner_text("#run-metrics")
    assert re.search(r"mae [0-9.e+-]+ load_mw", metrics) and "rmse" in metrics, metrics
    assert page.inner_text("#run-sample h3") == (
        "load_mw: forecast vs actual (validation, one week ahead after 20 weeks)"
    )  # the record's window of 20 and horizon of 1, counted in the file's weeks
    # the run just trained is the use panel's
    page.wait_for_function(
        "(() => { const u = window.scellisApp.use;"
        " return u.info && u.info.run === window.scellisApp.run.runId; })()",
        timeout=60_000, polling=500,
    )  # fmt: skip
    page.click("#use-forecast")
    page.wait_for_function(
        "document.querySelector('#use-plot svg .fc-xlabel')"
        " || document.querySelector('#use-message').textContent.includes('error')",
        timeout=120_000, polling=500,
    )  # fmt: skip
    assert page.locator("#use-plot svg").count() == 1, page.text_content("#use-message")
    assert page.text_content("#use-plot .fc-xlabel") == "date (weekly)"
    assert page.text_content("#use-plot .fc-ylabel") == "load_mw"
    assert page.text_content("#use-horizon-unit") == "(weeks)"
    assert "forecasts load_mw by date, weekly" in page.text_content("#use-what")
    said = shown_text(page)
    assert not OLD_WORDS.search(said), OLD_WORDS.findall(said)
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)  # the charts follow the new width
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, (width, wide)  # nothing runs off a phone's screen
        screenshot(page, f"data_labels_weekly_{width}")
    page.set_viewport_size({"width": 1440, "height": 900})
    # another example: the picker's words for it are its own again
    page.select_option("#run-example", "tcn_forecaster")
    page.wait_for_function("window.scellisApp.labels && window.scellisApp.labels.own")
    assert "sunspots" in page.inner_text("#run-example option:checked")
    assert page.inner_text("#run-example option[value='lstm_forecaster']") == before
