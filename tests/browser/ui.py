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
    wait_shown(page, text)


def wait_shown(page, text: str) -> None:
    """Wait until Model View shows the projection of record ``text``."""
    page.wait_for_function(
        "t => { const mv = window.scellisApp.modelView;"
        " return mv.result && mv.result.text === t"
        " && !document.querySelector('#model-view').dataset.busy; }",
        arg=text,
    )


# the page keeps each example's edited text under this prefix (web/src/drafts.js)
DRAFTS = "scellis-draft:"


def pick_example(page, name: str) -> str:
    """Show example ``name`` as its own text, as a user's pick does: the panels drop what
    an earlier test left in the shared page (a loaded or pinned file). Earlier tests'
    edits were kept as drafts, under whichever example was named then; they are dropped,
    so neither this pick nor the data panel's own switch of example brings one back.
    Returns the record."""
    page.evaluate(
        "async ([n, prefix]) => { const s = window.localStorage;"
        " for (const k of Object.keys(s)) if (k.startsWith(prefix)) s.removeItem(k);"
        " await window.scellisApp.loadExample(n); }",
        [name, DRAFTS],
    )
    record = page.evaluate("window.scellisApp.record")
    wait_shown(page, record)
    return record


def ui_page(engine_page, full: bool):
    """The shared engine page at a desktop size, Model View full screen or not."""
    engine_page.set_viewport_size({"width": 1440, "height": 900})
    full_screen(engine_page, full)
    return engine_page
