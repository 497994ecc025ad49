"""A dropped CSV's advice in the data panel: a trending monthly series gets the
``change`` normalisation and a season of 12, said with their reasons before the pin,
and the pinned record's data section names ``normalise: change`` (the record named
no normalisation of its own, so the data's pick is the one pinned). The verdict is the
native advice's for the same bytes (the oracle), and the series is random each run."""

from __future__ import annotations

import math
import random
from datetime import date

import pytest

from scellis.sml import parse

from .conftest import open_engine_page, screenshot
from .ui import set_record

pytestmark = pytest.mark.browser


def trending_monthly(rng: random.Random, n: int = 144) -> str:
    """A monthly series with a clear upward trend and a yearly cycle."""
    y0 = rng.randrange(1980, 2010)
    slope, amp, level = rng.uniform(1.0, 3.0), rng.uniform(3.0, 8.0), rng.uniform(50, 500)
    rows = ["month,sales"]
    for i in range(n):
        d = date(y0 + i // 12, i % 12 + 1, 1)
        v = level + slope * i + amp * math.sin(2 * math.pi * i / 12) + rng.gauss(0, 0.5)
        rows.append(f"{d},{v:.3f}")
    return "\n".join(rows) + "\n"


def test_a_dropped_trending_csv_is_advised_and_pinned_with_change(contexts, site_url, tmp_path):
    page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})[2]
    page.wait_for_function("window.scellisApp.recordName === 'lstm_forecaster'")
    # the starter record without a normalisation of its own: the data's pick applies
    record = page.evaluate("window.scellisApp.record")
    own = [ln for ln in record.splitlines() if ln.strip().startswith("normalise:")]
    for ln in own:
        record = record.replace(ln + "\n", "")
    assert "normalise" not in (parse(record, "m.sml").data.get("data") or {})
    set_record(page, record)

    text = trending_monthly(random.Random())
    path = tmp_path / "sales.csv"
    path.write_text(text, encoding="utf-8")
    from scellis.data.advice import advise

    native = advise(path, "sales")
    assert native["data"]["normalise"] == "change" and native["season"] == 12

    page.set_input_files(
        ".dp-file", files=[{"name": "sales.csv", "mimeType": "text/csv", "buffer": text.encode()}]
    )
    line = page.locator(".dp-advice")
    line.wait_for(state="visible", timeout=60_000)
    said = line.text_content()
    assert "“change”" in said and "Season 12" in said, said
    assert native["why"]["normalise"] in said and native["why"]["season"] in said

    page.click(".dp-use")
    page.wait_for_function("window.scellisApp.dataset !== null", timeout=60_000)
    data = parse(page.evaluate("window.scellisApp.record"), "m.sml").data["data"]
    assert data["normalise"] == "change"
    assert "picked from the data" in line.text_content()
    assert page.eval_on_selector('.dp-opt[data-key="normalise"]', "e => e.value") == "change"
    screenshot(page, "csv_advice")
