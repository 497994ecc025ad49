"""The data panel in headless Chromium: a CSV by picker or drop, columns, preview, pin.

The record the page ends with is checked natively: ``scellis.data.load_data`` reads the
same bytes with the same options and must find the sha256 the page wrote.
"""

from __future__ import annotations

import asyncio
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scellis.data import load_data, text_dataset
from scellis.sml import parse
from scellis.train import PROD_TOLERANCE
from scellis.webapp import api

from .conftest import finish_training, screenshot, start_training
from .ui import pick_example, set_record, ui_page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()


def native_losses(record: str, opts: dict) -> list[float]:
    async def go():
        args = json.dumps({"record_text": record, "device": "reference", **opts})
        return [e["loss"] async for e in api.dispatch("train", args) if e["kind"] == "log"]

    # in a thread: Playwright's sync API owns this thread's event loop
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


VALUE_HEAD = ".dp-loaded .dp-table th.dp-value"  # the picked file's value column


def make_csv(seed: int, n: int = 160) -> tuple[str, list[float]]:
    rng = random.Random(seed)
    level = [round(40 + 30 * rng.random() + 0.3 * i, 2) for i in range(n)]
    rows = ["month,flow,temp,site"] + [
        f"{1990 + i // 12}-{i % 12 + 1:02d}-01,{v},{rng.gauss(10, 4):.3f},s{rng.randint(1, 3)}"
        for i, v in enumerate(level)
    ]
    return "\n".join(rows) + "\n", level


@pytest.fixture
def page(engine_page):
    return ui_page(engine_page, False)


def reset(page) -> None:
    """The LSTM example as picked, whatever earlier tests left in the shared page."""
    assert pick_example(page, "lstm_forecaster") == LSTM


def test_csv_by_picker_columns_preview_and_pin(page, tmp_path):
    reset(page)
    text, level = make_csv(21)
    f = tmp_path / "river flow.csv"
    f.write_text(text)
    page.set_input_files(".dp-file", str(f))
    page.wait_for_selector(".dp-loaded:not([hidden])")
    assert page.is_hidden(".dp-own")  # the example's own preview gives way to the file
    assert page.text_content(".dp-size") == f"{len(level)} rows × 4 columns"
    values = page.eval_on_selector_all(".dp-value option", "os => os.map(o => o.value)")
    assert values == ["flow", "temp"]  # the numeric columns; site is text, month a date
    times = page.eval_on_selector_all(".dp-time option", "os => os.map(o => o.value)")
    assert times == ["", "month"] and page.input_value(".dp-time") == "month"
    headers = page.eval_on_selector_all(
        ".dp-loaded .dp-table th", "ts => ts.map(t => t.textContent)"
    )
    assert headers == ["month", "flow", "temp", "site"]
    first = page.eval_on_selector_all(
        ".dp-loaded .dp-table tbody tr:first-child td", "t => t.map(c => c.textContent)"
    )
    assert first == text.splitlines()[1].split(",")
    # the plot draws every row of the chosen series, scaled between its min and max
    assert page.get_attribute(".dp-loaded .dp-plot", "data-points") == str(len(level))
    labels = page.eval_on_selector_all(
        ".dp-loaded .dp-plot text", "ts => ts.map(t => t.textContent)"
    )
    assert f"{max(level):.3g}" in labels or str(round(max(level))) in labels
    rows = text.splitlines()
    assert rows[1].split(",")[0] in labels and rows[-1].split(",")[0] in labels  # the time axis
    page.select_option(".dp-value", "temp")
    page.wait_for_function(f"document.querySelector('{VALUE_HEAD}').textContent === 'temp'")
    page.select_option(".dp-value", "flow")
    page.wait_for_function(f"document.querySelector('{VALUE_HEAD}').textContent === 'flow'")
    page.click(".dp-use")
    page.wait_for_selector(".dp-hash")
    record = page.evaluate("window.scellisApp.record")
    data = parse(record).data["data"]
    assert data["column"] == "flow" and data["datetime"] == "month"
    assert data["source"] == "datasets/river_flow.csv"
    # the native connector, on the same bytes and options, agrees on the version
    native = load_data({**data, "source": str(f)})
    assert native.digest == data["sha256"]
    assert page.get_attribute(".dp-hash", "title") == data["sha256"]
    assert page.evaluate("window.scellisApp.dataset.hash") == data["sha256"]
    # Model View shows the new record, comments kept, and it validates
    page.wait_for_function("t => window.scellisApp.modelView.code.text === t", arg=record)
    assert "# fitted on the training split only" in record
    page.wait_for_function("document.querySelector('.mv-status').textContent === 'valid'")
    screenshot(page, "data_panel_csv")


def test_drop_a_text_file(page):
    reset(page)
    rng = random.Random(5)
    text = "".join(rng.choice("the quick brown fox\n") for _ in range(2000))
    page.evaluate(
        """t => {
          const dt = new DataTransfer();
          dt.items.add(new File([t], 'notes.txt', {type: 'text/plain'}));
          const drop = document.querySelector('.dp-drop');
          drop.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true}));
          drop.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true}));
        }""",
        text,
    )
    page.wait_for_selector(".dp-loaded .dp-text:not([hidden])")
    assert page.is_hidden(".dp-own")
    assert page.text_content(".dp-size") == f"2,000 characters, {len(set(text))} distinct"
    assert page.is_hidden(".dp-loaded .dp-plot")
    # pinned on the forecaster shown, the text trains the char Transformer, which the
    # panel brings in itself
    page.click(".dp-use")
    page.wait_for_selector(".dp-hash")
    assert page.evaluate("window.scellisApp.recordName") == "char_transformer"
    data = parse(page.evaluate("window.scellisApp.record")).data["data"]
    assert data["format"] == "text" and data["source"] == "datasets/notes.txt"
    assert text_dataset(text, 32, 16, 0.1).digest == data["sha256"]


def test_a_bad_csv_is_one_clear_message(page, tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text('a,b\n1,"unterminated\n')
    page.set_input_files(".dp-file", str(f))
    f2 = tmp_path / "empty.csv"
    f2.write_text("")
    page.set_input_files(".dp-file", str(f2))
    page.wait_for_function("document.querySelector('.dp-error').textContent.includes('empty')")
    assert "Traceback" not in page.text_content(".dp-error")


def test_the_tab_trains_on_the_pinned_csv_and_refuses_a_wrong_pin(page, tmp_path):
    reset(page)
    text, _ = make_csv(33)
    f = tmp_path / "pinned.csv"
    f.write_text(text)
    page.set_input_files(".dp-file", str(f))
    page.wait_for_selector(".dp-loaded:not([hidden])")
    page.click(".dp-use")
    page.wait_for_function("window.scellisApp.record.includes('datasets/pinned.csv')")
    record = page.evaluate("window.scellisApp.record")
    pin = parse(record).data["data"]["sha256"]
    set_record(page, record)
    # full batches only (the shapes the LSTM's other tests compiled), prod tier
    opts = {"max_steps": 2, "samples": False, "validate": False, "log_every": 1}
    opts.update(tier="prod", drop_last=True)
    start_training(page, opts)
    finish_training(page, 300_000)
    events = page.evaluate("window.scellisApp.run.events")
    losses = [e["loss"] for e in events if e["kind"] == "log"]
    # the oracle: the same record trained natively on the same file (the reference
    # device, which the prod tier promises to match); on the record's own sunspots the
    # losses would be others
    native = native_losses(record.replace("datasets/pinned.csv", str(f)), opts)
    tol = PROD_TOLERANCE["f32"]["dense"]
    assert len(losses) == len(native) == 2
    for b, n in zip(losses, native):
        assert abs(b - n) <= tol["atol"] + tol["rtol"] * abs(n), (losses, native)
    sunspots = native_losses(LSTM, opts)
    assert all(abs(a - b) > 1e-3 * abs(b) for a, b in zip(native, sunspots))
    # the same record pinned to another version: the run refuses to start on this file
    wrong = record.replace(pin, "f" * 64)
    set_record(page, wrong)
    start_training(page, {"max_steps": 2, "samples": False})
    page.wait_for_function("window._run !== null", timeout=120_000)
    out = page.evaluate("window._run")
    assert "data.sha256" in out.get("err", ""), out
    assert page.text_content(".dp-current").startswith("Pinned: pinned.csv")
    set_record(page, LSTM)  # a record without the file: the panel no longer claims the pin
    assert page.text_content(".dp-current") == "Training uses the example's own data."
    assert page.evaluate("window.scellisApp.dataset") is None
