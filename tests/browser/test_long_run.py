"""The long run, honestly: the screen wake lock is asked for only on the user's click.

The page never calls ``navigator.wakeLock.request`` by itself: not on load, not when a
run starts, not when the tab is hidden. The "Keep screen on" button asks the user
first (a confirm dialog); a "no" asks the browser for nothing, a "yes" takes one
lock, and a second click gives it back. The browser's real Wake Lock API is used
(Chromium headless, the permission granted through the DevTools protocol); a spy
only counts the calls the page makes.
"""

from __future__ import annotations

import pytest

from .conftest import screenshot

pytestmark = pytest.mark.browser

SPY = """
(() => {
  window._wakeCalls = 0;
  if (!navigator.wakeLock) return;
  const real = navigator.wakeLock.request.bind(navigator.wakeLock);
  navigator.wakeLock.request = (type) => { window._wakeCalls++; return real(type); };
})();
"""


def test_wake_lock_only_on_the_users_click(contexts, site_url):
    ctx, _ = contexts.new()
    page = ctx.new_page()
    page.add_init_script(SPY)
    cdp = ctx.new_cdp_session(page)
    page.goto(site_url)
    origin = site_url.rstrip("/")
    cdp.send("Browser.grantPermissions", {"origin": origin, "permissions": ["wakeLockScreen"]})
    page.wait_for_selector("#run-wakelock")
    assert page.evaluate("'wakeLock' in navigator")
    # hidden tab: the page warns, and still asks for no lock by itself
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', {value: 'hidden',"
        " configurable: true}); document.dispatchEvent(new Event('visibilitychange'));"
    )
    page.wait_for_timeout(500)
    assert page.evaluate("window._wakeCalls") == 0

    # the user says no to the question: nothing is asked of the browser
    page.once("dialog", lambda d: d.dismiss())
    page.click("#run-wakelock")
    page.wait_for_timeout(300)
    assert page.evaluate("window._wakeCalls") == 0
    assert page.inner_text("#run-wakelock") == "Keep screen on"

    # the user says yes: one lock, held, said in the run log
    page.once("dialog", lambda d: d.accept())
    page.click("#run-wakelock")
    page.wait_for_function(
        "document.getElementById('run-wakelock').textContent !== 'Keep screen on'"
        " || document.getElementById('banner').innerText.includes('wake lock')"
    )
    assert page.evaluate("window._wakeCalls") == 1
    assert page.inner_text("#run-wakelock") == "Let screen sleep", page.inner_text("#banner")
    assert "screen wake lock on (asked by the user)" in page.text_content("#run-log")
    screenshot(page, "wake_lock_on")

    # a second click gives the lock back without asking the browser for another
    page.click("#run-wakelock")
    page.wait_for_function(
        "document.getElementById('run-wakelock').textContent === 'Keep screen on'"
    )
    assert page.evaluate("window._wakeCalls") == 1
    ctx.close()
