"""Runs in browser storage: a tab's run is recorded in IndexedDB (IDBFS under /scellis),
survives the tab's death as ``interrupted``, resumes in a reopened tab (same profile)
from its last checkpoint, and its exported bundle continues natively.

One Chromium profile is opened, trained in for a few steps, closed mid-run (after the
step-4 checkpoint was flushed), and reopened. The reverse trip (a native run's bundle
imported through the panel's file input, then resumed in the tab) runs in the same page.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scellis.cli.main import main
from scellis.store.records import Records

from .conftest import open_engine_page, start_training

pytestmark = pytest.mark.browser

# long enough that the tab is closed mid-run even where a step takes milliseconds
STEPS = 60
OPTIONS = dict(
    max_steps=STEPS, log_every=1, tier="prod", samples=False, validate=False, drop_last=True,
    checkpoint_every=2,
)  # fmt: skip
STEP_MS = 300_000
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"


def _native_bundle(tmp_path) -> dict:
    store = tmp_path / "made-natively"
    train = ["train", str(EXAMPLE), "--store", str(store), "--device", "reference", "--json",
             "--max-steps", "4", "--checkpoint-every", "2", "--log-every", "1"]  # fmt: skip
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(main, train).result() == 0
    records = Records(store)
    try:
        (run,) = records.runs()
        records.drop_checkpoints(run["id"], [4])
        records.finish(run["id"], "interrupted")
    finally:
        records.close()
    file = tmp_path / "native.tar"
    assert main(["runs", "export", run["id"], "--store", str(store), "-o", str(file)]) == 0
    return {"run": run["id"], "file": file}


def _events(page):
    return page.evaluate("window.scellisApp.run.events")


def test_close_reopen_interrupted_resume_then_native_resume(contexts, site_url, tmp_path, capsys):
    ctx, profile, page = open_engine_page(contexts, site_url)
    start_training(page, OPTIONS, "lstm_forecaster")
    # the worker posts a checkpoint event only after flushing the store to IndexedDB
    page.wait_for_function(
        "window.scellisApp.run.events.some(e => e.kind === 'checkpoint' && e.step === 4)",
        timeout=STEP_MS, polling=500,
    )  # fmt: skip
    rid = next(e["run"] for e in _events(page) if e["kind"] == "progress")
    ctx.close()  # the tab dies mid-run: no end, no finish

    ctx, _, page = open_engine_page(contexts, site_url, profile)
    sel = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_selector(sel, timeout=60_000)
    assert page.get_attribute(sel, "data-status") == "interrupted"
    listed = page.evaluate("window.scellisApp.run.runs.list")
    (mine,) = [r for r in listed if r["id"] == rid]
    # 4, or a later even step if the tab got that far before closing
    assert mine["checkpoint_step"] in range(4, STEPS, 2), mine

    page.evaluate("window._run = null")
    page.click(f"{sel} button.run-resume")
    page.wait_for_function(
        "(() => { const r = window.scellisApp.run;"
        " return !r.running && r.events.some(e => e.kind === 'end'); })()",
        timeout=STEP_MS, polling=500,
    )  # fmt: skip
    evs = _events(page)
    assert evs[0]["kind"] == "resume" and evs[0]["step"] == mine["checkpoint_step"]
    steps = [e["step"] for e in evs if e["kind"] == "log"]
    assert steps == list(range(mine["checkpoint_step"] + 1, STEPS + 1))
    page.wait_for_function(
        f"document.querySelector(\"{sel}\")?.dataset.status === 'done'", timeout=30_000
    )

    # the reverse: a run trained natively (killed after its step-2 checkpoint: the
    # status Ctrl-C leaves, and no later checkpoint), exported by the CLI, is imported
    # into the tab through the panel's file input and resumed there
    other = _native_bundle(tmp_path)
    page.set_input_files("#runs-import", str(other["file"]))
    osel = f"#run-runs tr[data-run='{other['run']}']"
    page.wait_for_selector(osel, timeout=60_000)
    assert page.get_attribute(osel, "data-status") == "interrupted"
    # the panel says what the import added
    assert f"as run {other['run']}" in page.inner_text("#runs-message.runs-ok")
    page.click(f"{osel} button.run-resume")
    page.wait_for_function(
        f"document.querySelector(\"{osel}\")?.dataset.status === 'done'", timeout=STEP_MS
    )
    evs = _events(page)
    assert evs[0] == {"kind": "resume", "run": other["run"], "step": 2, "skipped": []}
    assert [e["step"] for e in evs if e["kind"] == "log"] == [3, 4]

    # Export downloads the bundle; the native CLI imports it and continues the run
    with page.expect_download(timeout=60_000) as dl:
        page.click(f"{sel} button.run-export")
    bundle = tmp_path / "run.tar"
    dl.value.save_as(bundle)
    ctx.close()
    store = tmp_path / "native"
    capsys.readouterr()  # the native train's lines above
    assert main(["runs", "import", str(bundle), "--store", str(store)]) == 0
    resume = ["resume", rid, "--store", str(store), "--device", "reference", "--to-step",
              str(STEPS + 2), "--json"]  # fmt: skip
    # in a thread: Playwright's sync API owns this thread's event loop
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(main, resume).result() == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x["step"] for x in lines if x["kind"] == "log"] == [STEPS + 1, STEPS + 2]
    records = Records(store)
    try:
        run = records.run(rid)
        assert run["status"] == "done" and run["step"] == STEPS + 2
        # the tab's metrics came along: steps logged in the browser, the last two natively
        assert [s for s, _ in records.metrics(rid)] == list(range(1, STEPS + 3))
    finally:
        records.close()
