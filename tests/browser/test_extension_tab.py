"""Load extension… in headless Chromium: the user's own optimizer, loaded from a file
they pick, is in Model View's optimizer picker like a built-in and trains; a record
naming a file the user did not load (as an imported run or a shared link would bring)
is refused at Model View and at Train, its code never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import finish_training, screenshot, start_training
from .ui import set_record, ui_page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "tests" / "webapp" / "user_ext" / "sign_sgd.py"
EXAMPLE = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
PICK = ".mv-card[data-block='optimizer'] select.mv-pick"
RUN = dict(max_steps=12, log_every=1, validate=False, samples=False, drop_last=True)


def _shown(page) -> None:
    """Model View shows the page's current record."""
    page.wait_for_function(
        "() => { const mv = window.scellisApp.modelView;"
        " return mv.result && mv.result.text === window.scellisApp.record"
        " && !document.querySelector('#model-view').dataset.busy; }",
        timeout=120_000,
    )


def test_a_loaded_optimizer_is_picked_in_the_form_and_trains(engine_page):
    page = ui_page(engine_page, False)
    set_record(page, EXAMPLE.replace("batch_size: 32", "batch_size: 16"))
    page.click(".mv-tabs button[data-tab='form']")
    page.wait_for_selector(PICK, timeout=60_000)
    assert "user/optimizer/sign_sgd" not in page.inner_text(PICK)  # not before it is loaded
    page.set_input_files("#run-extension-file", str(EXTENSION))
    page.wait_for_function(
        "() => document.querySelector('#run-extensions').dataset.loaded === '1'"
        ' && document.querySelector("' + PICK + " option[value='user/optimizer/sign_sgd']\")",
        timeout=120_000,
    )
    assert "user/optimizer/sign_sgd (optimizer)" in page.inner_text("#run-extension-status")
    page.select_option(PICK, "user/optimizer/sign_sgd")
    page.wait_for_function(
        "() => window.scellisApp.record.includes('block_id: user/optimizer/sign_sgd')",
        timeout=60_000,
    )
    _shown(page)
    assert page.evaluate("window.scellisApp.modelView.result.ok")
    record = page.evaluate("window.scellisApp.record")
    assert "lr: 0.01" in record  # the learning rate kept across the pick
    page.wait_for_function(
        "() => document.querySelector('#run-plan').dataset.verdict === 'green'",
        timeout=120_000,
    )
    page.locator(PICK).scroll_into_view_if_needed()  # the picker in view (the form scrolls)
    screenshot(page, "extension_optimizer_1440")
    page.set_viewport_size({"width": 412, "height": 900})
    page.locator(PICK).scroll_into_view_if_needed()
    # nothing of the loader's line spills out of the narrow panel
    assert page.evaluate(
        "() => { const r = document.querySelector('#run-extensions');"
        " return r.scrollWidth <= r.clientWidth + 1; }"
    )
    screenshot(page, "extension_optimizer_412")
    page.set_viewport_size({"width": 1440, "height": 900})
    start_training(page, RUN)
    finish_training(page, timeout_ms=300_000)
    losses = page.evaluate(
        "window.scellisApp.run.events.filter(e => e.kind === 'log').map(e => e.loss)"
    )
    assert len(losses) == RUN["max_steps"], losses
    assert sum(losses[-3:]) < sum(losses[:3]), losses

    # a record naming other code (as an import or a link brings it): refused, not run
    other = record.replace("model:", "extensions: [sign_sgd.py, stealer.py]\nmodel:", 1)
    set_record(page, other)
    assert not page.evaluate("window.scellisApp.modelView.result.ok")
    said = page.inner_text("#model-view")
    assert "stealer.py" in said and "Load extension" in said
    start_training(page, RUN)
    page.wait_for_function("window._run !== null", timeout=120_000)
    err = page.evaluate("window._run").get("err") or page.inner_text("#banner")
    assert "stealer.py" in err and "never runs code" in err, err
    screenshot(page, "extension_refused")
    set_record(page, EXAMPLE)
    page.click(".mv-tabs button[data-tab='graph']")  # Model View as the other tests expect it
