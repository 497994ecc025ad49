"""Model View and data panel helpers for the browser tests (on conftest's engine_page)."""

from __future__ import annotations


def full_screen(page, on: bool) -> None:
    """Open or close Model View's full-screen editor (it covers the other panels)."""
    if ("mv-full" in (page.get_attribute("#model-view", "class") or "")) != on:
        page.click(".mv-expand")


def set_record(page, text: str) -> None:
    """Make ``text`` the page's record and wait until Model View shows its projection."""
    page.evaluate(
        "t => { window.scellisApp.record = t; window.scellisApp.emit('record', t); }", text
    )
    page.wait_for_function(
        "t => { const mv = window.scellisApp.modelView;"
        " return mv.result && mv.result.text === t"
        " && !document.querySelector('#model-view').dataset.busy; }",
        arg=text,
    )


def ui_page(engine_page, full: bool):
    """The shared engine page at a desktop size, Model View full screen or not."""
    engine_page.set_viewport_size({"width": 1440, "height": 900})
    full_screen(engine_page, full)
    return engine_page
