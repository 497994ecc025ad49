"""Run links in the tab: a run trained in one profile is filtered in the runs list and
shared with "Link"; the link opened in a fresh profile trains the same record on the
link's tier and says the losses match bit for bit (the two tabs' own losses are the
oracle); a link whose data is not bundled asks for the file and refuses another one."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

import scellis
from scellis.cli.main import main
from scellis.run.reproduce import pinned_text
from scellis.run.share import read_link
from storeutil import write_record

from .conftest import finish_training, open_engine_page, screenshot, start_training, wait_engine

pytestmark = pytest.mark.browser

RUN = dict(max_steps=3, samples=False)
STEP_MS = 300_000


def _losses(page) -> list[list]:
    return page.evaluate("window.scellisApp.run.events.filter(e => e.kind === 'log')"
                         ".map(e => [e.step, e.loss])")  # fmt: skip


def _filter(page, where: str) -> str:
    page.evaluate("document.getElementById('runs-message').textContent = ''")
    page.fill("#runs-where", where)
    page.click("#runs-filter-apply")
    page.wait_for_function("document.getElementById('runs-message').textContent !== ''")
    return page.inner_text("#runs-message")


def test_a_link_reproduces_the_run_in_a_fresh_profile(contexts, site_url, tmp_path):
    _, _, page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})
    start_training(page, RUN, "lstm_forecaster")
    finish_training(page, timeout_ms=STEP_MS)
    losses = _losses(page)
    rid = page.evaluate("window.scellisApp.run.runId")
    assert [s for s, _ in losses] == [1, 2, 3]
    page.wait_for_selector(f"#run-runs tr[data-run='{rid}'][data-status='done']")

    # the runs list filters as `scellis runs --where` does
    last = losses[-1][1]
    assert "1 run matches" in _filter(page, f"loss <= {last!r}")
    assert page.locator("#run-runs tbody tr[data-run]").count() == 1
    assert "0 runs match" in _filter(page, f"loss < {last!r}")
    assert "--where" in _filter(page, "loss < 1; DROP TABLE runs")
    page.fill("#runs-where", "")
    page.click("#runs-filter-apply")
    page.wait_for_selector(f"#run-runs tr[data-run='{rid}']")

    page.click(f"#run-runs tr[data-run='{rid}'] button.run-link")
    page.wait_for_function("document.getElementById('runs-link').value !== ''")
    link = page.input_value("#runs-link")
    assert link.startswith(site_url + "#repro=")
    shared = read_link(link)
    assert shared.losses == [tuple(x) for x in losses] and shared.tier == "debug"

    # a fresh profile opens the link: no store, no draft, the same record and losses
    ctx, _ = contexts.new()
    other = ctx.new_page()
    other.set_viewport_size({"width": 1440, "height": 900})
    other.goto(link)
    wait_engine(other)
    other.wait_for_selector("#run-share[data-state='done']", timeout=STEP_MS)
    again = _losses(other)
    assert again == losses  # bit for bit, as the box says
    assert other.get_attribute("#run-share", "data-bitwise") == "true"
    assert "match the link bit for bit" in other.inner_text("#run-share")
    # the link's record, with its seed and dataset version written in
    assert other.evaluate("window.scellisApp.record") == pinned_text(shared)
    assert f"sha256: {shared.dataset}" in pinned_text(shared)
    picked = other.evaluate("document.getElementById('run-example').selectedOptions[0].textContent")
    assert picked == f"shared run {shared.run}"
    screenshot(other, "share_link_reproduced")

    # a link whose data is a file: asked for, checked, then trained
    folder = tmp_path / "native"
    folder.mkdir()
    rec = write_record(folder, seed=5)
    store = folder / "s"
    argv = ["train", str(rec), "--store", str(store), "--device", "reference", "--max-steps", "2"]
    with ThreadPoolExecutor(1) as pool:  # Playwright's loop owns this thread
        assert pool.submit(main, argv).result() == 0
    link2 = scellis.share("last", store=store, site=site_url)
    fragment = link2[link2.index("#") :]
    other.evaluate("(h) => { window._open = window.scellisApp.run.share.open(h); }", fragment)
    other.wait_for_selector("#run-share[data-state='asking'] #share-file")
    assert "series.csv" in other.inner_text("#run-share")
    wrong = tmp_path / "series.csv"
    wrong.write_text(rec.with_name("series.csv").read_text() + "3.5\n")
    other.set_input_files("#share-file", str(wrong))
    other.wait_for_function("document.querySelector('#run-share').textContent"
                            ".includes('is not the run')")  # fmt: skip
    other.set_input_files("#share-file", str(rec.with_name("series.csv")))
    other.wait_for_selector("#run-share[data-state='done']", timeout=STEP_MS)
    got = _losses(other)
    want = read_link(link2).losses
    same = [tuple(x) for x in got] == want
    # reference there, WebGPU here: the box tells what the numbers say, either way
    assert other.get_attribute("#run-share", "data-bitwise") == json.dumps(same)
    assert [s for s, _ in got] == [s for s, _ in want]
    assert all(abs(a[1] - b) <= 1e-4 * abs(b) for a, b in zip(got, (v for _, v in want)))
    screenshot(other, "share_link_data_file")
