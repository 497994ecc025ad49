"""What a reload keeps: a draft that pins an uploaded CSV trains after the reload on the
same bytes (the dataset's hash and the first losses of a run before and after are equal,
and the hash is the native engine's for that file); an imported model (record and
weights) comes back as a draft with the same forward, and discarding it shows an example.
One Chromium profile for the module, reloaded as a user would."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest

from scellis.data.record import load_data
from scellis.sml import parse
from tinymodels import mlp, onnx_file, torch

from .conftest import (
    finish_training,
    open_engine_page,
    screenshot,
    start_training,
    wait_engine,
)
from .ui import set_record

pytestmark = pytest.mark.browser

STEP_MS = 300_000
RUN = dict(max_steps=4, log_every=1, validate=False, samples=False, checkpoint_every=4)
STORE = "/scellis/store"


@pytest.fixture(scope="module")
def page(contexts, site_url):
    page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})[2]
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")
    return page


def reload(page):
    page.reload()
    wait_engine(page, page.console_log)
    page.wait_for_function("window.scellisApp.record && window.scellisApp.recordName")


def csv_text(rng: random.Random, n: int = 150) -> str:
    start = date(rng.randrange(1990, 2020), 1, 1)
    rows = ["week,demand"] + [
        f"{start + timedelta(weeks=i)},{rng.gauss(100, 15):.3f}" for i in range(n)
    ]
    return "\n".join(rows) + "\n"


def train_once(page) -> tuple[dict[int, float], str]:
    """A short run of the record shown: its losses by step and its dataset's hash."""
    start_training(page, RUN)
    finish_training(page, timeout_ms=STEP_MS)
    events = page.evaluate("window.scellisApp.run.events")
    losses = {e["step"]: e["loss"] for e in events if e["kind"] == "log"}
    rid = page.evaluate("window.scellisApp.run.runId")
    view = page.evaluate(
        "rid => window.scellisClient.call('run_view', {run: rid, store: '/scellis/store'})", rid
    )
    return losses, view["dataset_hash"]


def test_a_pinned_file_trains_the_restored_draft_after_a_reload(page, tmp_path):
    rng = random.Random()
    text = csv_text(rng)
    page.set_input_files(
        ".dp-file", files=[{"name": "demand.csv", "mimeType": "text/csv", "buffer": text.encode()}]
    )
    page.locator(".dp-loaded").wait_for(state="visible", timeout=60_000)
    page.click(".dp-use")
    page.wait_for_function("window.scellisApp.dataset !== null", timeout=60_000)
    # an edit of the pinned record (its learning rate), as typed in the code view
    lr = round(rng.uniform(0.002, 0.05), 4)
    pinned = page.evaluate("window.scellisApp.record")
    assert "lr: 0.01 }" in pinned
    set_record(page, pinned.replace("lr: 0.01 }", f"lr: {lr} }}"))
    record = page.evaluate("window.scellisApp.record")
    assert f"lr: {lr} " in record and "datasets/demand.csv" in record
    before, hashed = train_once(page)
    # the oracle of the hash: the native engine's digest of the same bytes and options
    (tmp_path / "demand.csv").write_text(text)
    data = {**parse(record, "m.sml").data["data"], "source": str(tmp_path / "demand.csv")}
    assert hashed == load_data(data).digest == data["sha256"]
    reload(page)
    note = page.locator("#draft-note")
    note.wait_for(state="visible", timeout=60_000)
    assert "restored your draft of lstm_forecaster" in note.inner_text()
    assert page.evaluate("window.scellisApp.record") == record
    page.wait_for_function(
        "document.querySelector('.dp-current').textContent.startsWith('Training uses demand.csv')",
        timeout=60_000,
    )
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)
        screenshot(page, f"kept_data_after_reload_{width}")
    page.set_viewport_size({"width": 1440, "height": 900})
    after, again = train_once(page)
    assert again == hashed
    assert after == before and len(after) == RUN["max_steps"]
    page.click("#draft-note .draft-discard")  # the next test starts from the example


def test_an_imported_model_comes_back_after_a_reload(page, tmp_path):
    torch.manual_seed(random.randrange(1 << 30))
    model = mlp()
    path = onnx_file(model, torch.randn(2, 4), tmp_path / "mine.onnx")
    page.set_input_files(".import-files-input", str(path))
    page.wait_for_function(
        "() => { const s = window.scellisApp.importer; return !s.busy && s.forward != null; }",
        timeout=240_000,
        polling=500,
    )
    record = page.evaluate("window.scellisApp.record")
    x = torch.randn(3, 4)
    call = (
        "([record_text, x]) => window.scellisClient.call('forward',"
        " {record_text, inputs: {x}, full: true})"
    )
    first = page.evaluate(call, [record, x.tolist()])
    reload(page)
    note = page.locator("#draft-note")
    note.wait_for(state="visible", timeout=60_000)
    assert "restored your imported model mine.onnx" in note.inner_text()
    assert page.evaluate("window.scellisApp.record") == record
    assert page.evaluate("window.scellisApp.recordName") == "imported:mine.onnx"
    assert page.inner_text("#run-example option:checked") == "your model: mine.onnx"
    again = page.evaluate(call, [record, x.tolist()])
    # the weights came back: the forward is the one before the reload, and torch's
    assert again["outputs"] == first["outputs"]
    with torch.no_grad():
        want = model(x).tolist()
    for got_row, want_row in zip(again["outputs"], want):
        assert got_row == pytest.approx(want_row, rel=1e-4, abs=1e-5)
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)
        screenshot(page, f"kept_import_after_reload_{width}")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.click("#draft-note .draft-discard")
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")
    assert page.locator("#run-example option[data-imported]").count() == 0
    reload(page)  # forgotten: the page opens on the example
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")
    assert page.locator("#draft-note").is_hidden()
