"""The page at a phone's, a laptop's and a desktop's width, and its accessibility.

At each width: no horizontal scroll, the panels do not overlap (they stack at phone
width), the charts fit their panel and follow a resize. axe-core (web/node_modules)
finds no serious or critical violation on the main page; every control is reachable
with Tab and has a name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import screenshot
from .ui import full_screen

pytestmark = pytest.mark.browser

AXE = Path(__file__).resolve().parents[2] / "web" / "node_modules" / "axe-core" / "axe.min.js"
PANELS = ["#start-here", "#model-view", "#data-panel", "#run-panel"]
WIDTHS = [412, 1024, 1440]
# the focused element's id, else its class (an SVG element's className is not a string)
FOCUSED = "(e => e.id || e.getAttribute('class') || e.tagName)(document.activeElement)"


def boxes(page) -> dict:
    return page.evaluate(
        "sels => Object.fromEntries(sels.map(s => { const r ="
        " document.querySelector(s).getBoundingClientRect();"
        " return [s, {l: r.left, r: r.right, t: r.top, b: r.bottom}]; }))",
        PANELS,
    )


def overlap(a: dict, b: dict) -> bool:
    across = a["l"] < b["r"] - 1 and b["l"] < a["r"] - 1
    return across and a["t"] < b["b"] - 1 and b["t"] < a["b"] - 1


@pytest.mark.parametrize("width", WIDTHS)
def test_layout_at_width(engine_page, width):
    page = engine_page
    full_screen(page, False)
    # a few points, so the charts are drawn (an empty run shows a line of text instead)
    page.evaluate(
        "(() => { const c = document.getElementById('run-curves').curves;"
        " if (!c.data().steps.length) [1, 2, 3].forEach(s => { c.add('loss', s, 1 / s);"
        " c.add('lr', s, 1e-3); }); })()"
    )
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_timeout(600)  # resize observers run after layout
    wide = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], f"horizontal scroll at {width}px: {wide}"
    b = boxes(page)
    for i, x in enumerate(PANELS):
        for y in PANELS[i + 1 :]:
            assert not overlap(b[x], b[y]), f"{x} overlaps {y} at {width}px: {b[x]} {b[y]}"
        assert b[x]["r"] <= width + 0.5, f"{x} runs past the window at {width}px"
    if width < 900:  # one column: each panel below the one before
        tops = [b[p]["t"] for p in PANELS]
        assert tops == sorted(tops), tops
    # the charts fit the run panel's width, whatever it was when they were made
    run = b["#run-panel"]
    charts = page.evaluate(
        "[...document.querySelectorAll('#run-curves .uplot')]"
        ".map(e => e.getBoundingClientRect().right)"
    )
    assert len(charts) == 2 and all(r <= run["r"] + 0.5 for r in charts), (charts, run)
    screenshot(page, f"layout_{width}")


def test_axe_finds_no_serious_violation(engine_page):
    page = engine_page
    full_screen(page, False)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:4]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert not bad, "\n".join(bad)


def test_controls_are_reachable_by_keyboard(engine_page):
    page = engine_page
    full_screen(page, False)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    wanted = {"run-example", "run-train", "run-max-steps", "runs-import-button", "dp-choose"}
    seen = set()
    for _ in range(250):
        page.keyboard.press("Tab")
        seen.add(page.evaluate(FOCUSED))
        if wanted <= seen:
            break
    assert wanted <= seen, (wanted - seen, sorted(seen))
