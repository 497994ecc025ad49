"""The data panel's options stay editable once a CSV is pinned: each change pins the
file again, the record follows (its inputs take a new window), and what the panel names
comes from the pinned data section. The native connector on the same bytes and options
is the oracle for the version and the windows."""

from __future__ import annotations

import random
import re

import pytest

from scellis.data import load_data
from scellis.sml import parse

from .conftest import screenshot
from .test_data_panel import LSTM, make_csv
from .ui import set_record, ui_page

pytestmark = pytest.mark.browser


def _pinned(page, check: str) -> dict:
    """The record once its data section satisfies ``check`` (JS over ``d``)."""
    page.wait_for_function(
        "c => { const t = window.scellisApp.record; const m = /data:[\\s\\S]*/.exec(t);"
        " return m && new Function('d', `return ${c}`)(m[0]); }",
        arg=check,
        timeout=60_000,
    )
    return parse(page.evaluate("window.scellisApp.record")).data


def test_options_edited_after_pinning_pin_again(engine_page, tmp_path):
    page = ui_page(engine_page, False)
    set_record(page, LSTM)
    text, _ = make_csv(31, n=200)
    f = tmp_path / "flow.csv"
    f.write_text(text)
    page.set_input_files(".dp-file", str(f))
    page.wait_for_selector(".dp-loaded:not([hidden])")
    # the controls start from the record's data section
    assert page.input_value(".dp-opt[data-key='window']") == "20"
    assert page.input_value(".dp-opt[data-key='normalise']") == "standard"
    page.click(".dp-use")
    page.wait_for_selector(".dp-hash")
    first = page.evaluate("window.scellisApp.dataset.hash")

    window = random.Random().randrange(6, 30)
    page.select_option(".dp-value", "temp")
    _pinned(page, "d.includes('column: temp')")
    page.fill(".dp-opt[data-key='window']", str(window))
    page.dispatch_event(".dp-opt[data-key='window']", "change")
    _pinned(page, f"d.includes('window: {window}')")
    page.fill(".dp-opt[data-key='val_fraction']", "0.3")
    page.dispatch_event(".dp-opt[data-key='val_fraction']", "change")
    _pinned(page, "d.includes('val_fraction: 0.3')")
    page.select_option(".dp-opt[data-key='normalise']", "minmax")
    doc = _pinned(page, "d.includes('normalise: minmax')")
    data = doc["data"]
    assert (data["column"], data["window"], data["val_fraction"]) == ("temp", window, 0.3)
    assert doc["inputs"]["window"]["shape"] == ["batch", window, 1]
    page.wait_for_function("h => window.scellisApp.dataset.hash === h", arg=data["sha256"])
    native = load_data({**data, "source": str(f)})
    assert native.digest == data["sha256"] != first
    pinned = page.inner_text(".dp-pinned")
    assert f"{len(native.x_train)} training windows, {len(native.x_val)} validation" in pinned
    said = page.inner_text(".dp-current")
    for part in ("value column “temp”", f"window {window}", "30% for validation",
                 "normalise minmax"):  # fmt: skip
        assert part in said, said
    # still editable, and the record on show validates
    assert page.is_enabled(".dp-value") and page.is_enabled(".dp-opt[data-key='window']")
    page.wait_for_function("document.querySelector('.mv-status').textContent === 'valid'")
    screenshot(page, "data_options_pinned")


def test_the_controls_say_what_the_pinned_data_uses(engine_page, tmp_path):
    # a code edit of the pinned section, then another option pinned: the controls and
    # the pinned text name the same validation fraction, the record's
    page = ui_page(engine_page, False)
    set_record(page, LSTM)
    text, _ = make_csv(37, n=160)
    f = tmp_path / "flow.csv"
    f.write_text(text)
    page.set_input_files(".dp-file", str(f))
    page.wait_for_selector(".dp-loaded:not([hidden])")
    page.click(".dp-use")
    page.wait_for_selector(".dp-hash")
    shown = float(page.input_value(".dp-opt[data-key='val_fraction']"))
    frac = random.Random().choice([v for v in (0.1, 0.15, 0.25, 0.3, 0.35) if v != shown])
    record = page.evaluate("window.scellisApp.record")
    edited, n = re.subn(r"val_fraction: [0-9.]+", f"val_fraction: {frac}", record)
    assert n == 1
    set_record(page, edited)
    page.fill(".dp-opt[data-key='window']", "9")
    page.dispatch_event(".dp-opt[data-key='window']", "change")
    data = _pinned(page, "d.includes('window: 9')")["data"]
    page.wait_for_function("h => window.scellisApp.dataset.hash === h", arg=data["sha256"])
    assert data["val_fraction"] == frac
    assert page.input_value(".dp-opt[data-key='val_fraction']") == str(frac)
    assert f"{round(frac * 100)}% for validation" in page.inner_text(".dp-current")
