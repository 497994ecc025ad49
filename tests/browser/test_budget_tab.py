"""The GPU memory budget in the tab: text that is not a size is one line beside the box
and changes nothing; a size makes the plan follow (named as set in this tab; a red one
offers to set the budget), is kept across a reload, and holds a run's plan. Its own
profile: the budget must not leak into the other tests' plans. Screenshots at desktop
and phone widths."""

from __future__ import annotations

import pytest

from .conftest import finish_training, open_engine_page, screenshots_at, start_training, wait_engine
from .ui import pick_example

pytestmark = pytest.mark.browser

PLAN_MS = 120_000


def _verdict(page, verdict: str, says: str) -> str:
    page.wait_for_function(
        "([v, s]) => { const b = document.querySelector('#run-plan');"
        " return b.dataset.verdict === v && b.textContent.includes(s); }",
        arg=[verdict, says], timeout=PLAN_MS,
    )  # fmt: skip
    return page.inner_text("#run-plan")


def _type(page, text: str) -> None:
    page.fill("#run-budget", text)
    page.press("#run-budget", "Enter")


def test_budget_box_plans_and_trains_with_the_users_budget(contexts, site_url):
    ctx, _, page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})
    assert page.is_visible("#run-budget") and page.input_value("#run-budget") == ""
    pick_example(page, "lstm_forecaster")  # a few MiB at its peak
    _verdict(page, "green", "declared: 4 GiB")

    _type(page, "lots")
    page.wait_for_selector("#run-budget-error:not([hidden])")
    error = page.inner_text("#run-budget-error")
    assert "cannot read 'lots' as a size" in error and "Traceback" not in error
    assert page.get_attribute("#run-budget", "aria-invalid") == "true"
    screenshots_at(page, "budget_refused")
    assert "declared: 4 GiB" in page.inner_text("#run-plan")

    _type(page, "256 KiB")  # less than this run needs: red, and the advice leads to the box
    red = _verdict(page, "red", "budget 256 KiB, set in this tab")
    assert "If this GPU has more memory than 256 KiB" in red and page.is_hidden("#run-budget-error")
    screenshots_at(page, "budget_red")
    page.click("#run-plan .plan-budget")
    assert page.evaluate("document.activeElement.id") == "run-budget"

    _type(page, "16GiB")
    green = _verdict(page, "green", "budget 16 GiB, set in this tab")
    assert "If this GPU" not in green
    assert page.input_value("#run-budget") == "16 GiB"  # as the engine reads it
    screenshots_at(page, "budget_set")

    page.reload()
    wait_engine(page)
    assert page.input_value("#run-budget") == "16 GiB"
    assert "set in this tab" in page.inner_text("#run-budget-note")
    # the run's own plan is held to it too (a small record: one quick step)
    start_training(page, dict(max_steps=1, log_every=1, samples=False, validate=False),
                   "lstm_forecaster")  # fmt: skip
    finish_training(page, timeout_ms=PLAN_MS * 2)
    (plan,) = page.evaluate("window.scellisApp.run.events.filter(e => e.kind === 'plan')")
    assert plan["budget"] == 16 << 30 and plan["budget_source"] == "budget 16 GiB, set in this tab"

    _type(page, "")  # cleared: the declared budget again, and nothing kept
    page.wait_for_function(
        "() => document.querySelector('#run-budget-note').textContent.includes('plans assume')"
    )
    assert page.evaluate("window.localStorage.getItem('scellis.budget')") is None
    ctx.close()
