"""Past runs in the tab: a resume from an older checkpoint branches (a new run listed
with its parent, the first run's history kept), the resumed curves draw in step order,
a past run opens with its curves and final metrics, two runs compare side by side;
the engine's own rows (the tab store's records, read natively) are the oracle."""

from __future__ import annotations

import pytest

from .conftest import finish_training, open_engine_page, screenshot, start_training
from .test_layout_a11y import AXE

pytestmark = pytest.mark.browser

# loss points at even steps, validations at 3, 6 and the end: a validation step the
# loss curve does not have comes before the checkpoint at 4
RUN = dict(max_steps=8, log_every=2, eval_every=3, checkpoint_every=4, samples=False)
STEP_MS = 300_000


@pytest.fixture(scope="module")
def page(contexts, site_url):
    return open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})[2]


def _events(page):
    return page.evaluate("window.scellisApp.run.events")


def _wait_done(page, rid):
    page.wait_for_selector(f"#run-runs tr[data-run='{rid}'][data-status='done']", timeout=60_000)


def _axe(page):
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']}: {v['help']} — {[n['target'] for n in v['nodes']][:4]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def test_an_older_checkpoint_branches_and_past_runs_open_and_compare(page):
    start_training(page, RUN, "lstm_forecaster")
    finish_training(page, timeout_ms=STEP_MS)
    first = _events(page)
    rid = page.evaluate("window.scellisApp.run.runId")
    losses = {e["step"]: e["loss"] for e in first if e["kind"] == "log"}
    _wait_done(page, rid)
    row = f"#run-runs tr[data-run='{rid}']"
    page.select_option(f"{row} select.run-from", "4")
    page.click(f"{row} button.run-resume")
    page.wait_for_function(
        "(() => { const r = window.scellisApp.run; return !r.running"
        " && r.events.some(e => e.kind === 'end'); })()",
        timeout=STEP_MS,
        polling=500,
    )
    again = _events(page)
    branch = again[0]["run"]
    assert again[0]["kind"] == "resume" and again[0]["parent"] == f"{rid}@4" and branch != rid
    # the same state replayed: the first run's losses for steps 5..8
    got = {e["step"]: e["loss"] for e in again if e["kind"] == "log"}
    assert sorted(got) == [6, 8]
    assert all(abs(got[s] - losses[s]) <= 1e-5 * abs(losses[s]) for s in got)
    # the drawn curves: one point per step, in step order, the history's validation at
    # step 3 between the loss points at 2 and 4
    drawn = page.evaluate("document.getElementById('run-curves').curves.data()")
    assert drawn["steps"] == sorted(set(drawn["steps"])), drawn["steps"]
    val = [(s, v) for s, v in zip(drawn["steps"], drawn["val_loss"]) if v is not None]
    assert [s for s, _ in val] == [3, 6, 8], val

    # the list: the branch names its parent; the first run keeps its history
    _wait_done(page, branch)
    brow = f"#run-runs tr[data-run='{branch}']"
    assert page.get_attribute(brow, "data-parent") == f"{rid}@4"
    assert f"branch of {rid} at step 4" in page.inner_text(f"{brow} .run-parent")
    listed = {r["id"]: r for r in page.evaluate("window.scellisApp.run.runs.list")}
    assert listed[rid]["step"] == 8 and listed[rid]["checkpoints"] == [4, 8]

    # a past run opened: its stored curves and final metrics
    page.click(f"{row} button.run-open")
    page.wait_for_selector("#runs-past .past-final")
    shown = page.evaluate("window.scellisApp.run.runs.past.state.data")
    assert [s for s, _ in shown["curves"]["loss"]] == sorted(losses)
    assert [v for _, v in shown["curves"]["loss"]] == [losses[s] for s in sorted(losses)]
    final = page.inner_text("#runs-past .past-final")
    assert final.startswith(f"final: loss {losses[8]:.4g} · best "), final
    assert "max_steps=8" in page.inner_text("#runs-past .past-options")
    screenshot(page, "past_run_1440")

    # two runs compared: both loss curves on one chart, metrics side by side
    page.check(f"{row} .run-pick")
    page.check(f"{brow} .run-pick")
    page.click("#runs-compare")
    page.wait_for_selector("#runs-past .past-table")
    g = page.evaluate("window.scellisApp.run.runs.past.state.data")
    assert [r["id"] for r in g["runs"]] == [rid, branch]
    series = page.evaluate(
        "(() => { const u = window.scellisApp.run.runs.past.state.plot;"
        " return u.series.map(s => s.label); })()"
    )
    assert series[1:] == ["a train", "a validation", "b train", "b validation"]
    table = page.inner_text("#runs-past .past-table")
    assert rid in table and branch in table and "best loss" in table
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)
        wide = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1], f"horizontal scroll at {width}px: {wide}"
        screenshot(page, f"compare_runs_{width}")
    page.set_viewport_size({"width": 1440, "height": 900})
    bad = _axe(page)
    assert not bad, "\n".join(bad)
