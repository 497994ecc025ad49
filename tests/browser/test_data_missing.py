"""The data panel with a CSV that has a few "n/a" cells, and with a header-only CSV.

The gaps are named (how many, which rows), the preview still plots every present value,
and the record's ``missing`` policy is offered; the record it pins trains natively with
that policy. A header-only file says so, and no earlier preview stays on show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scellis.data import load_data
from scellis.sml import parse

from .conftest import screenshot
from .ui import pick_example, ui_page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
LSTM = (ROOT / "examples" / "lstm_forecaster.sml").read_text()
GAPS = {5, 17, 40}  # data rows (1-based) left as "n/a"


def gappy_csv() -> str:
    rows = ["year,level"] + [
        f"{1900 + i},{'n/a' if i + 1 in GAPS else round(50 + 20 * ((i * 7) % 11) / 11, 2)}"
        for i in range(120)
    ]
    return "\n".join(rows) + "\n"


@pytest.fixture
def page(engine_page):
    page = ui_page(engine_page, False)
    assert pick_example(page, "lstm_forecaster") == LSTM
    return page


def test_missing_cells_are_named_and_the_policy_is_offered(page, tmp_path):
    f = tmp_path / "gappy.csv"
    f.write_text(gappy_csv())
    page.set_input_files(".dp-file", str(f))
    page.wait_for_selector(".dp-missing:not([hidden])", timeout=60_000)
    note = page.inner_text(".dp-missing")
    assert "3 of 120 values" in note and "5, 17, 40" in note, note
    # the plot keeps every present value, with no NaN in its geometry
    assert page.is_hidden(".dp-own")  # the example's own preview gives way to the file
    assert page.get_attribute(".dp-loaded .dp-plot", "data-points") == str(120 - len(GAPS))
    assert "NaN" not in page.inner_html(".dp-loaded .dp-plot")
    assert page.locator(".dp-loaded .dp-table td.dp-na").count() == 1  # row 5 is in the preview
    assert "gappy.csv is loaded" in page.inner_text(".dp-current")
    page.select_option(".dp-missing-policy", "mean")
    page.click(".dp-use")
    page.wait_for_function("(window.scellisApp.dataset || {}).name === 'gappy.csv'")
    ds = page.evaluate("window.scellisApp.dataset")
    assert "warning" not in ds and ds["train_windows"] > 0, ds
    record = page.evaluate("window.scellisApp.record")
    data = parse(record, "model.sml").data["data"]
    assert data["missing"] == "mean"
    assert "Pinned: gappy.csv" in page.inner_text(".dp-current")
    screenshot(page, "data_missing_values")
    # the same file and options natively: the same pinned version
    data = {**data, "source": str(f)}
    assert load_data(data).digest == data["sha256"]


def test_a_header_only_csv_says_so_and_leaves_no_stale_preview(page, tmp_path):
    good, empty = tmp_path / "good.csv", tmp_path / "empty.csv"
    good.write_text(gappy_csv())
    empty.write_text("year,level\n")
    page.set_input_files(".dp-file", str(good))
    page.wait_for_selector(".dp-loaded:not([hidden])", timeout=60_000)
    page.set_input_files(".dp-file", str(empty))
    page.wait_for_function(
        "document.querySelector('.dp-error').textContent.includes('no data rows')", timeout=60_000
    )
    assert page.locator(".dp-loaded").is_hidden()
    assert "empty.csv cannot be used" in page.inner_text(".dp-current")
    screenshot(page, "data_header_only")
