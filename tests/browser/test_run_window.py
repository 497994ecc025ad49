"""The run in its own window, and runs that carry what they need (headless Chromium).

One Chromium profile, one tab (``main``):

- Detach: a live run moves to a detached window (a popup of the same site with its own
  engine worker) at a step boundary; the window takes the run store over, continues
  the same run from that checkpoint and relays its progress to the tab, which takes the
  store back at the end. The oracle: the same run, uninterrupted, in the same tab.
- A run on a CSV loaded in the data panel, with drop_last and no validation: resuming
  it from an earlier checkpoint (any listed one) keeps those options, and its bundle
  (which carries the CSV) continues natively; the oracle is a native run.
- A detached window closed mid-run: the tab takes the store back, lists the run
  ``interrupted`` and one click resumes it (oracle: the run uninterrupted, bitwise); a
  window closed before it takes over leaves the run in the tab, untouched.
- A native run on a CSV named by an absolute path (then deleted): its bundle carries the
  kept copy, and the tab imports and resumes it (oracle: the native run, in tolerance).
- Model View's full-screen overlay covers the page, however tall the run panel is.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scellis.cli.main import main as cli
from scellis.store.records import Records
from scellis.train import PROD_TOLERANCE
from scellis.webapp import api

from .conftest import (
    finish_training,
    open_engine_page,
    screenshot,
    start_training,
    wait_engine,
    watch,
)
from .ui import full_screen

pytestmark = pytest.mark.browser

# long enough that a pause or a detach lands mid-run even where a step takes milliseconds
STEPS = 40
OPTIONS = dict(
    max_steps=STEPS, log_every=1, tier="prod", samples=False, validate=False, drop_last=True,
    checkpoint_every=2,
)  # fmt: skip
STEP_MS = 420_000
LOGS = "window.scellisApp.run.events.filter(e => e.kind === 'log')"


@pytest.fixture(scope="module")
def main(contexts, site_url):
    return open_engine_page(contexts, site_url, viewport={"width": 1280, "height": 900})[2]


@pytest.fixture(scope="module")
def oracle(main) -> dict[int, float]:
    """The per-step losses of the runs the detach tests move, never detached: the same
    record and options in the same tab on the same device, for 2 * STEPS steps (a run
    of STEPS steps makes the first half of them: the record has no schedule)."""
    start_training(main, {**OPTIONS, "max_steps": 2 * STEPS}, "lstm_forecaster")
    finish_training(main, timeout_ms=STEP_MS)
    losses = _logs(main.evaluate("window.scellisApp.run.events"))
    assert sorted(losses) == list(range(1, 2 * STEPS + 1))
    return losses


def _upto(losses: dict[int, float], last: int) -> dict[int, float]:
    return {s: v for s, v in losses.items() if s <= last}


def _detach(page):
    """Click Detach: the window it opens, with its console lines collected. (win, log)"""
    with page.context.expect_page(timeout=60_000) as info:
        page.click("#run-detach")
    win = info.value
    wlog: list[str] = []
    watch(win, wlog)
    return win, wlog


def _logs(events) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in events if e["kind"] == "log"}


def _done(page, timeout=STEP_MS):
    page.wait_for_function(
        "(() => { const r = window.scellisApp.run;"
        " return !r.running && r.events.some(e => e.kind === 'end'); })()",
        timeout=timeout, polling=500,
    )  # fmt: skip
    return page.evaluate("window.scellisApp.run.events")


def test_detach_moves_the_live_run_to_its_own_window(main, oracle):
    page = main
    start_training(page, OPTIONS, "lstm_forecaster")
    page.wait_for_function(f"{LOGS}.length >= 2", timeout=STEP_MS, polling=500)
    # held while the window's engine boots (on a software GPU the run would end first)
    page.click("#run-pause")
    win, wlog = _detach(page)
    try:
        _follow_detached_run(page, win, wlog, oracle)
    finally:
        win.close()  # a failure here must not leave the store held for the next test


def _follow_detached_run(page, win, wlog, oracle):
    assert "#detach=" in win.url
    wait_engine(win, wlog)
    # the tab stops at a step, lets the store go, and shows what the window relays
    page.wait_for_function(
        "(() => { const r = window.scellisApp.run;"
        " return r.detach.phase === 'away' && r.remote.some(e => e.kind === 'log'); })()",
        timeout=STEP_MS, polling=500,
    )  # fmt: skip
    assert "continues in its own window" in page.inner_text("#banner")
    assert page.is_disabled("#run-train")
    # the Use panel waits for the store rather than failing to read it
    assert "run store is with another window" in page.inner_text("#use-what")
    assert page.inner_text("#use-message") == "" and page.is_disabled("#use-run")
    assert page.is_disabled("#runs-import-button") and page.is_disabled("#runs-refresh")
    screenshot(page, "detach_tab_while_away")
    win.wait_for_function(
        "window.scellisApp.run.detach.phase === 'ended'", timeout=STEP_MS, polling=500
    )
    screenshot(win, "detach_window")
    assert win.is_hidden("#model-view") and win.is_hidden("#run-train")
    # the run keeps the options it was started with: the window offers none
    assert win.is_hidden("#run-options-main") and win.is_hidden("#run-options")
    assert win.is_hidden("#run-hint")
    # the window's plan box keeps the run's own plan, not one of the page's record
    assert win.get_attribute("#run-plan", "data-verdict") == "green"
    assert "peak" in win.inner_text("#run-plan")
    assert "run store is with another window" in win.inner_text("#use-what")
    assert win.inner_text("#use-message") == "" and win.is_disabled("#runs-import-button")
    here = page.evaluate("window.scellisApp.run.events")
    there = win.evaluate("window.scellisApp.run.events")
    rid = next(e["run"] for e in here if e["kind"] == "progress")
    k = max(_logs(here))
    assert [e["kind"] for e in here][-2:] == ["stopped", "end"] and here[-2]["step"] == k
    assert there[0] == {"kind": "resume", "run": rid, "step": k, "skipped": []}, there[0]
    assert sorted(_logs(there)) == list(range(k + 1, STEPS + 1))
    assert there[-1]["kind"] == "end" and not there[-1].get("stopped_by_user")
    # the window draws the whole run: the tab's steps (stored metrics), then its own
    drawn = win.evaluate("document.querySelector('#run-curves').curves.data()")
    assert drawn["steps"] == list(range(1, STEPS + 1))
    assert dict(zip(drawn["steps"], drawn["loss"])) == {**_logs(here), **_logs(there)}
    # the relayed events are the window's own
    page.wait_for_function(
        "window.scellisApp.run.detach.phase === null", timeout=120_000, polling=500
    )
    assert page.evaluate("window.scellisApp.run.remote") == there
    # the store is back in the tab: the one run, done, at its last step
    sel = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=60_000
    )
    assert "continues in its own window" not in page.inner_text("#banner")
    # the Use panel reads the store again: the run, at the window's last checkpoint
    page.wait_for_function(
        f"document.querySelector('#use-what').textContent.includes('checkpoint at step {STEPS}')",
        timeout=60_000,
    )
    assert page.inner_text("#use-message") == "" and not page.is_disabled("#use-run")
    assert not page.is_disabled("#runs-import-button")
    joined = {**_logs(here), **_logs(there)}
    want = _upto(oracle, STEPS)
    assert joined == want, (joined, want)  # bitwise: same device, kernels and seed


def _csv(seed: int = 3, n: int = 120) -> str:
    # 76 training windows in batches of 32: drop_last drops a short third batch
    rng = random.Random(seed)
    return "year,v\n" + "".join(f"{1800 + i},{rng.uniform(5, 100):.2f}\n" for i in range(n))


def _native_losses(record: str, folder: Path, steps: int) -> dict[int, float]:
    """The same run natively (reference device), reading the CSV from ``folder``."""
    (folder / "datasets").mkdir(parents=True)
    (folder / "datasets" / "flow.csv").write_text(_csv())
    args = {**OPTIONS, "max_steps": steps, "record_text": record, "device": "reference"}

    async def go():
        return [e async for e in api.dispatch("train", json.dumps(args))]

    old = os.getcwd()
    os.chdir(folder)  # the record names datasets/flow.csv, as the tab's worker saved it
    try:
        return _logs(asyncio.run(go()))
    finally:
        os.chdir(old)


def _within(got: dict, want: dict) -> None:
    tol = PROD_TOLERANCE["f32"]["dense"]
    assert got.keys() <= want.keys(), (got, want)
    for s, v in got.items():
        assert abs(v - want[s]) <= tol["atol"] + tol["rtol"] * abs(want[s]), (s, got, want)


def test_csv_run_keeps_options_resumes_any_checkpoint_and_bundles_its_data(main, tmp_path, capsys):
    page = main
    f = tmp_path / "flow.csv"
    f.write_text(_csv())
    page.set_input_files(".dp-file", str(f))
    page.wait_for_selector(".dp-loaded:not([hidden])")
    page.select_option(".dp-value", "v")
    page.click(".dp-use")
    page.wait_for_selector(".dp-hash")
    record = page.evaluate("window.scellisApp.record")
    assert "datasets/flow.csv" in record

    start_training(page, {**OPTIONS, "max_steps": 6})  # nothing here races the run
    finish_training(page, timeout_ms=STEP_MS)
    first = page.evaluate("window.scellisApp.run.events")
    whole = _logs(first)
    assert sorted(whole) == list(range(1, 7)) and not [e for e in first if e["kind"] == "eval"]
    rid = next(e["run"] for e in first if e["kind"] == "progress")
    sel = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=60_000
    )
    # every checkpoint is listed, a done run's last one too (it trains on with more steps)
    (row,) = [r for r in page.evaluate("window.scellisApp.run.runs.list") if r["id"] == rid]
    assert row["checkpoints"] == [2, 4, 6]
    choices = page.eval_on_selector_all(f"{sel} .run-from option", "os => os.map(o => o.value)")
    assert choices == ["2", "4", "6"]
    page.select_option(f"{sel} select.run-from", "2")
    page.click(f"{sel} button.run-resume")
    again = _done(page)
    # an older checkpoint than the last: a new run branches off at step 2
    branch = again[0]["run"]
    assert again[0] == {"kind": "resume", "run": branch, "step": 2, "skipped": [],
                        "parent": f"{rid}@2"} and branch != rid  # fmt: skip
    # the options it was started with: the same steps (drop_last) and no evaluation
    assert not [e for e in again if e["kind"] == "eval"]
    assert _logs(again) == {s: v for s, v in whole.items() if s > 2}
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=60_000
    )

    # the bundle carries the CSV: the native CLI imports it and continues to step 8
    with page.expect_download(timeout=60_000) as dl:
        page.click(f"{sel} button.run-export")
    bundle = tmp_path / "run.tar"
    dl.value.save_as(bundle)
    store = tmp_path / "native"
    capsys.readouterr()
    assert cli(["runs", "import", str(bundle), "--store", str(store)]) == 0
    assert (store / "files" / rid / "datasets" / "flow.csv").read_text() == _csv()
    resume = ["resume", rid, "--store", str(store), "--device", "reference", "--tier", "prod",
              "--to-step", "8", "--json"]  # fmt: skip
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's loop
        assert pool.submit(cli, resume).result() == 0
        native_run = pool.submit(_native_losses, record, tmp_path / "oracle", 8).result()
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    natively = {x["step"]: x["loss"] for x in lines if x.get("kind") == "log"}
    assert sorted(natively) == [7, 8]
    _within(whole, native_run)  # the tab's steps 1..6
    _within(natively, native_run)  # and the native continuation of its bundle
    records = Records(store)
    try:
        assert records.run(rid)["status"] == "done" and records.run(rid)["step"] == 8
    finally:
        records.close()


def test_a_native_csv_run_continues_in_the_tab_from_its_bundle(main, tmp_path, capsys):
    """``scellis train`` on a CSV named by an absolute path outside the store, the CSV
    deleted, ``scellis runs export``: the tab imports the bundle and resumes the run on
    the kept copy; its steps match the native run's (another device: within tolerance)."""
    page = main
    csv = tmp_path / "user" / "flow.csv"
    csv.parent.mkdir()
    csv.write_text(_csv())
    text = (Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml").read_text()
    text = text.replace("source: bundled:sunspots_yearly.csv", f"source: {csv}")
    text = text.replace("column: sunspots", "column: v").replace("epochs: 60", "epochs: 2")
    rec = tmp_path / "flow.sml"
    rec.write_text(text)
    store, bundle = tmp_path / "native", tmp_path / "run.tar"
    train = ["train", str(rec), "--store", str(store), "--device", "reference", "--json",
             "--max-steps", "4", "--checkpoint-every", "2"]  # fmt: skip
    capsys.readouterr()
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's loop
        assert pool.submit(cli, train).result() == 0
    events = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    native = {e["step"]: e["loss"] for e in events if e["kind"] == "log"}
    rid = events[-1]["run"]
    assert sorted(native) == [1, 2, 3, 4]
    csv.unlink()  # the bundle carries the run's copy
    assert cli(["runs", "export", rid, "-o", str(bundle), "--store", str(store)]) == 0
    page.set_input_files("#runs-import", str(bundle))
    sel = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=60_000
    )
    choices = page.eval_on_selector_all(f"{sel} .run-from option", "os => os.map(o => o.value)")
    assert choices == ["2", "4"]
    page.select_option(f"{sel} select.run-from", "2")
    page.click(f"{sel} button.run-resume")
    again = _done(page)
    assert again[0]["kind"] == "resume" and again[0]["step"] == 2, again[:2]
    got = _logs(again)
    assert sorted(got) == [3, 4]
    _within(got, native)
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=60_000
    )


def test_full_screen_model_view_covers_the_whole_page(main):
    page = main
    page.set_viewport_size({"width": 1440, "height": 900})
    # a run panel taller than the window (a long run list or log), as after a session
    page.evaluate("document.querySelector('#run-runs').style.minHeight = '1600px'")
    try:
        full_screen(page, True)
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height <= 900, f"the page is {height}px tall under a 900px overlay"
        at = page.evaluate(
            "[...Array(9).keys()].map(i => document.elementFromPoint(40 + i * 170, 897)"
            ".closest('section')?.id)"
        )
        assert set(at) == {"model-view"}, at
        screenshot(page, "model_view_full_screen")
        full_screen(page, False)
        assert page.evaluate("document.documentElement.scrollHeight") > 1600
    finally:
        page.evaluate("document.querySelector('#run-runs').style.minHeight = ''")


def test_closing_the_window_mid_run_lists_the_run_interrupted_and_resumes_it(main, oracle):
    """The detached window closes while it trains: the tab takes the store back, lists
    the run ``interrupted`` and its one-click Resume continues from the window's last
    checkpoint with the losses of the uninterrupted run (bitwise: same device)."""
    page = main
    longer = {**OPTIONS, "max_steps": 2 * STEPS}  # steps left however fast the window trains
    start_training(page, longer, "lstm_forecaster")
    page.wait_for_function(f"{LOGS}.length >= 1", timeout=STEP_MS, polling=500)
    page.click("#run-pause")
    win, wlog = _detach(page)
    wait_engine(win, wlog)
    # the window trains on and writes a checkpoint of its own (flushed to the store)
    win.wait_for_function(
        "(() => { const ev = window.scellisApp.run.events;"
        " const k = ev[0] && ev[0].kind === 'resume' ? ev[0].step : null;"
        " return k !== null && ev.some(e => e.kind === 'checkpoint' && e.step > k); })()",
        timeout=STEP_MS, polling=500,
    )  # fmt: skip
    win.click("#run-pause")
    win.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'paused')", timeout=STEP_MS
    )
    assert win.inner_text("#run-state") == "paused"  # the engine holds: its checkpoint is flushed
    there = win.evaluate("window.scellisApp.run.events")
    assert there[-1]["kind"] != "end", "the window's run ended before it was closed"
    rid, k = there[0]["run"], there[0]["step"]
    saved = max(e["step"] for e in there if e["kind"] == "checkpoint")
    assert k < saved < 2 * STEPS
    win.close()
    sel = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_function(
        "window.scellisApp.run.detach.phase === null", timeout=120_000, polling=500
    )
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'interrupted'", timeout=60_000
    )
    assert "continues in its own window" not in page.inner_text("#banner")
    assert not page.is_disabled("#run-train")
    assert page.inner_text("#run-eta") == "–"  # the window's relayed progress is over
    (row,) = [r for r in page.evaluate("window.scellisApp.run.runs.list") if r["id"] == rid]
    assert row["checkpoint_step"] == saved, (row, saved)
    banner = page.locator("#banner [data-key='detach-closed']")
    assert f"checkpoint at step {saved}" in banner.inner_text(), banner.inner_text()
    screenshot(page, "detach_window_closed_mid_run")
    banner.locator("button", has_text="Resume").click()  # the one click
    again = _done(page)
    assert again[0] == {"kind": "resume", "run": rid, "step": saved, "skipped": []}, again[0]
    assert sorted(_logs(again)) == list(range(saved + 1, 2 * STEPS + 1))
    assert _logs(again) == {s: v for s, v in oracle.items() if s > saved}
    assert banner.count() == 0
    # the window's own steps were those of the uninterrupted run too
    assert _logs(there) == {s: v for s, v in oracle.items() if s in _logs(there)}
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=60_000
    )


def test_a_window_closed_before_it_takes_over_leaves_the_run_in_the_tab(main, oracle):
    page = main
    start_training(page, OPTIONS, "lstm_forecaster")
    page.wait_for_function(f"{LOGS}.length >= 1", timeout=STEP_MS, polling=500)
    page.click("#run-pause")
    _detach(page)[0].close()  # long before its engine is up
    page.wait_for_function(
        "window.scellisApp.run.detach.phase === null", timeout=60_000, polling=500
    )
    assert "closed before it took the run" in page.text_content("#run-log")
    assert page.evaluate("window.scellisApp.run.running")
    page.click("#run-pause")  # resume training here
    finish_training(page, timeout_ms=STEP_MS)
    here = page.evaluate("window.scellisApp.run.events")
    assert not [e for e in here if e["kind"] in ("stopped", "resume")]
    assert here[-1]["kind"] == "end" and not here[-1].get("stopped_by_user")
    assert _logs(here) == _upto(oracle, STEPS)


def test_a_detached_window_whose_tab_closed_takes_the_run_over(main, oracle):
    """Last (it closes the tab): the tab dies before it hands the run over; the window
    finds no one holding the store, takes it and resumes from the last checkpoint."""
    page = main
    start_training(page, OPTIONS, "lstm_forecaster")
    page.wait_for_function(f"{LOGS}.length >= 2", timeout=STEP_MS, polling=500)
    page.click("#run-pause")
    page.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'checkpoint')", timeout=STEP_MS
    )
    rid = next(e["run"] for e in page.evaluate("window.scellisApp.run.events")
               if e["kind"] == "progress")  # fmt: skip
    win, wlog = _detach(page)
    page.close()  # before the window's engine is up: no handover will come
    wait_engine(win, wlog)
    win.wait_for_function(
        "window.scellisApp.run.detach.phase === 'ended'", timeout=STEP_MS, polling=500
    )
    there = win.evaluate("window.scellisApp.run.events")
    assert there[0]["kind"] == "resume" and there[0]["run"] == rid, there[:2]
    k = there[0]["step"]
    assert k >= 2 and sorted(_logs(there)) == list(range(k + 1, STEPS + 1))
    assert _logs(there) == {s: v for s, v in _upto(oracle, STEPS).items() if s > k}
    assert "no tab holds the run store" in win.text_content("#run-log")
