"""The plan box's fixes and the graph's double click, in headless Chromium.

A red memory plan shows each fix the planner planned (a record edit or a run option
whose verdict is not red) as a button; pressing it applies the edit through the worker
(or sets the run option in the options box), the plan is made again and shows the
verdict the fix promised.
Double-clicking a node of the graph opens Model View full screen, selecting no text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import screenshot
from .ui import full_screen, set_record, ui_page

pytestmark = pytest.mark.browser

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()

PLAN = "(t) => window.scellisClient.call('plan', { record_text: t })"


@pytest.fixture
def page(engine_page):
    return ui_page(engine_page, False)


def plan_shown(page) -> str:
    return page.get_attribute("#run-plan", "data-verdict")


def test_a_plan_fix_button_applies_its_edit_and_the_plan_follows(page):
    # a batch whose activations are several times the declared budget: red
    text = EXAMPLE.replace("batch_size: 32", "batch_size: 262144")
    assert text != EXAMPLE
    set_record(page, text)
    page.wait_for_function(
        "() => document.querySelector('#run-plan').dataset.verdict === 'red'"
        " && document.querySelector('#run-plan .plan-fix')",
        timeout=120_000,
    )
    # Train is refused before anything is allocated; the banner points at the plan box
    page.click("#run-train")
    page.wait_for_function(
        "() => document.querySelector('#banner').textContent.includes('memory plan is red')",
        timeout=120_000,
    )
    page.wait_for_function(
        "() => document.querySelector('#run-plan .plan-fix') && !window.scellisApp.run.running",
        timeout=120_000,
    )
    screenshot(page, "plan_fix_red")
    fixes = page.eval_on_selector_all(
        "#run-plan .plan-fix",
        "bs => bs.map(b => [b.dataset.kind, b.dataset.verdict, b.textContent])",
    )
    assert fixes and all(v in ("green", "yellow") for _, v, _ in fixes), fixes
    # the fixes that would leave it red are not offered as buttons
    plan = page.evaluate(PLAN, text)
    promised = {r["kind"]: r for r in plan["remediations"]}
    editable = {k for k, r in promised.items() if r["set"] or r["option"]}
    assert {k for k, _, _ in fixes} == {
        k for k in editable if promised[k]["verdict"] in ("green", "yellow")
    }
    kind, verdict, _ = fixes[0]
    fix = promised[kind]
    page.click(f"#run-plan .plan-fix[data-kind='{kind}']")
    # the edit reaches the record (and Model View's code), then the plan is made again
    page.wait_for_function(
        "v => document.querySelector('#run-plan').dataset.verdict === v",
        arg=verdict,
        timeout=120_000,
    )
    record = page.evaluate("window.scellisApp.record")
    for path, value in fix["set"].items():
        assert path.count(".") or f"{path}: {value}" in record, (path, value)
    assert "batch_size: 262144" not in record
    assert page.evaluate("window.scellisApp.modelView.code.text") == record
    replanned = page.evaluate(PLAN, record)
    assert replanned["verdict"] == verdict and replanned["peak"] == fix["peak"], replanned
    assert replanned["peak"] < plan["peak"]
    assert "memory plan: " + verdict in page.inner_text("#run-plan")
    assert "memory plan is red" not in page.inner_text("#banner")  # nothing stale on screen
    screenshot(page, "plan_fix_applied")
    set_record(page, EXAMPLE)  # the next test's record is the example's own


def test_a_run_option_fix_sets_the_option_and_the_plan_follows(page):
    # the step fits; the validation forward at a huge evaluation batch does not: one fix
    # is a run option (no validation pass), not an edit of the record
    text = EXAMPLE.replace("batch_size: 64", "batch_size: 262144")
    assert text != EXAMPLE
    set_record(page, text)
    button = "#run-plan .plan-fix[data-kind='no_validation']"
    page.wait_for_selector(button, timeout=120_000)
    assert plan_shown(page) == "red" and page.is_checked("#run-validate")
    verdict = page.get_attribute(button, "data-verdict")
    assert verdict in ("green", "yellow")
    page.click(button)
    page.wait_for_function(
        "v => document.querySelector('#run-plan').dataset.verdict === v", arg=verdict,
        timeout=120_000,
    )  # fmt: skip
    assert not page.is_checked("#run-validate") and page.is_visible("#run-validate")
    assert page.evaluate("window.scellisApp.record") == text  # the record is as it was
    # the engine's own plan of the run without validation is the one the fix promised
    plan = page.evaluate(
        "t => window.scellisClient.call('plan', { record_text: t, validate: false })", text
    )
    assert plan["verdict"] == verdict and plan["eval_peak"] == 0
    screenshot(page, "plan_fix_option")
    # the options box as it was, for the tests after this one
    page.eval_on_selector(
        "#run-validate", "b => { b.checked = true; b.dispatchEvent(new Event('change')); }"
    )
    set_record(page, EXAMPLE)


def test_double_click_on_a_node_opens_model_view(page):
    set_record(page, EXAMPLE)
    full_screen(page, False)
    page.click(".mv-tabs button[data-tab='graph']")  # an earlier test may have left another
    node = page.locator(".mv-node[data-kind='block']").first
    name = node.get_attribute("data-id")
    node.dblclick()
    page.wait_for_function(
        "() => document.querySelector('#model-view').classList.contains('mv-full')"
    )
    # the node is the selected one, and the double click selected no text
    assert page.get_attribute(f".mv-node[data-id='{name}']", "class").split().count("selected") == 1
    assert page.evaluate("String(window.getSelection())") == ""
    assert page.inner_text(".mv-expand").startswith("✕")
    screenshot(page, "model_view_double_click")
    full_screen(page, False)
    assert "mv-full" not in page.get_attribute("#model-view", "class")
