"""The browser GPU adapter's error paths, in headless Chromium.

A WGSL shader that does not compile becomes a DeviceError in Python (through an error
scope, which the browser resolves asynchronously) carrying the compiler's message and
the source; a valid one compiles. A browser with no WebGPU adapter gets a page-level
message naming what is missing, before Pyodide even loads.
"""

from __future__ import annotations

import pytest

from .conftest import ARGS, screenshot, watch
from .ui import full_screen, set_record

pytestmark = pytest.mark.browser

GOOD = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() { out[0] = 7u; }
"""
BAD = "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }"

CALL = """async ([cmd, args]) => {
  try { return {ok: await window.scellisClient.call(cmd, args)}; }
  catch (e) { return {err: e.message, type: e.type}; }
}"""


def test_wgsl_errors_become_device_errors(engine_page):
    ok = engine_page.evaluate(CALL, ["check_kernel", {"code": GOOD}])
    assert ok == {"ok": {"ok": True}}
    bad = engine_page.evaluate(CALL, ["check_kernel", {"code": BAD}])
    assert bad.get("type") == "DeviceError", bad
    assert "WGSL pipeline failed to compile" in bad["err"]
    assert BAD in bad["err"]  # the source travels with the message
    # the device stays usable after a rejected shader
    assert engine_page.evaluate(CALL, ["check_kernel", {"code": GOOD}]) == {"ok": {"ok": True}}


def test_no_webgpu_adapter_is_said_on_the_page(contexts, site_url):
    # the same Chromium without --enable-unsafe-webgpu: navigator.gpu exists, no adapter
    plain = [a for a in ARGS if "webgpu" not in a]
    ctx, _ = contexts.new(args=plain)
    page = ctx.new_page()
    log: list[str] = []
    watch(page, log)
    page.goto(site_url)
    page.wait_for_function("document.body?.dataset.engine", timeout=60_000)
    assert page.evaluate("document.body.dataset.engine") == "failed"
    banner = page.inner_text("#banner")
    assert "found no GPU adapter" in banner and "WebGPU" in banner, banner
    assert page.is_disabled("#run-train")
    screenshot(page, "no_webgpu_adapter")
    ctx.close()


def test_red_memory_plan_refuses_to_start(engine_page):
    """A record whose step cannot fit is planned before any step: the page shows the
    red verdict with its remediations, and training does not start."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()
    huge = text.replace("hidden_size: 32", "hidden_size: 16384")
    huge = huge.replace("in_features: 32", "in_features: 16384")
    assert huge != text
    page = engine_page
    full_screen(page, False)  # Model View's tests may leave it covering the run panel
    set_record(page, huge)  # after the page's own example has loaded, not before it
    out = page.evaluate(
        "async () => { try { await window.scellisApp.run.train({max_steps: 1}); return 'ran'; }"
        " catch (e) { return e.message; } }"
    )
    assert out.startswith("the memory plan is red, so the run does not start"), out
    assert "exceeds the budget" in out and "to fit:" in out
    plan = page.inner_text("#run-plan")
    # the verdict in human units, with the fixes that would make it fit (or none fits)
    assert plan.startswith("memory plan: red") and "GiB" in plan, plan
    assert any(w in plan for w in ("To fit:", "Apply a fix:", "No single change fits")), plan
    assert "the memory plan is red" in page.inner_text("#banner")
    kinds = [e["kind"] for e in page.evaluate("window.scellisApp.run.events")]
    assert kinds == ["plan"]  # nothing after the verdict: no start, no step
    screenshot(page, "plan_red_refused")


def test_a_cold_steps_compiles_are_stamped(engine_page):
    """Each pipeline compile the tab starts is stamped on the browser's side when it
    resolves (the cold-start benchmark reads them): a first step at sizes no other test
    trains makes new pipelines, each stamped within that step, the last one resolved
    before the step's loss came back, the slowest with its WGSL."""
    call = "(o) => window.scellisClient.call('bench_train_step', o)"
    shape = {"batch": 8, "T": 8, "hidden": 24}
    r = engine_page.evaluate(call, {"model": "lstm2x64", "steps": 1, "repeats": 1, "shape": shape})
    first = r["first_step"]
    assert first["pipelines"] >= 1, first
    compiles = first["compiles"]
    assert len(compiles) >= first["pipelines"], first  # the model's build compiles too
    slack = 5.0  # ms: two readings of the worker's clock, by Python and by JavaScript
    for start, ms in compiles:
        assert -slack <= start and ms >= 0 and start + ms <= r["first_step_ms"] + slack
    # the list is rounded to 0.1 ms
    last = max(start + ms for start, ms in compiles)
    assert first["compiles_done_ms"] == pytest.approx(last, abs=0.2)
    slowest = first["slowest_compiles"]
    longest = sorted((ms for _, ms in compiles), reverse=True)[:3]
    assert [s["ms"] for s in slowest] == pytest.approx(longest, abs=0.1)
    assert all("@compute" in s["wgsl"] for s in slowest)
