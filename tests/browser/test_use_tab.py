"""Using a trained run in the tab: the forecast chart, Predict's CSV and the generation box.

Two tiny runs train natively (reference device, a few steps) and travel into the tab's
store as bundles, as a user would bring them: a yearly sunspots LSTM (the ``year``
column as its datetime) and a character Transformer. In the tab (WebGPU on
SwiftShader): the chart has its axes (years under it, the target's name and values
beside it, a legend), the horizon sets the number of forecast points, Predict downloads
the CSV of ``scellis predict``'s rows, whose rows are the engine's own predict run
natively on the same checkpoint; the generation box gives the text of ``run.generate``
run natively with the same seed and sampling, and Stop ends a long generation within
seconds. Screenshots at 412, 1024 and 1440 px wide go to tests/artifacts/.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scellis.run.generate import text_run
from scellis.run.reference import open_run
from scellis.run.use import predict_run
from scellis.store import bundle
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from webapp.test_use_api import SERIES, train

from .conftest import finish_training, screenshot, start_training
from .test_layout_a11y import AXE
from .ui import full_screen

pytestmark = pytest.mark.browser

STORE = "/scellis/store"
BUNDLED = Path(__file__).resolve().parents[2] / "src/scellis/data/bundled/sunspots_yearly.csv"
# f32 on SwiftShader against f32 on the reference device, in sunspot numbers
CLOSE = dict(rel=1e-4, abs=1e-3)
SERIOUS = ("serious", "critical")
SAMPLING = dict(temperature=0.8, top_k=4, max_new=24, seed=11)


def native(fn, *args):
    """``fn(*args)`` in a thread: Playwright's sync API owns this thread's event loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


def bring(page, store, rid: str) -> None:
    """Export run ``rid`` natively and import its bundle into the tab's store."""
    objects, records = ObjectStore(store), Records(store)
    try:
        raw = bundle.export_run(objects, records, rid)
    finally:
        records.close()
    data = base64.b64encode(raw).decode()
    page.evaluate(
        "async ([data, store]) => { await window.scellisClient.call('import_run',"
        " {data, store}); await window.scellisApp.run.runs.refresh(); }",
        [data, STORE],
    )


@pytest.fixture(scope="module")
def runs(engine_page, tmp_path_factory):
    from generate.genutil import record_text, write_text

    series = native(train, tmp_path_factory.mktemp("series"), SERIES)
    folder = tmp_path_factory.mktemp("lm")
    write_text(folder)
    lm = native(train, folder, record_text(context=8))
    for store, rid in (series, lm):
        bring(engine_page, store, rid)
    return {"series": series, "lm": lm}


def pick(page, rid: str) -> None:
    page.select_option("#use-run", rid)
    page.wait_for_function(
        "rid => window.scellisApp.use.info && window.scellisApp.use.info.run === rid", arg=rid
    )


def show_forecast(page, horizon: int) -> None:
    page.fill("#use-horizon", str(horizon))
    page.click("#use-forecast")
    page.wait_for_function(
        "h => { const s = document.querySelector('#use-plot svg');"
        " return s && s.dataset.forecastPoints === String(h); }",
        arg=horizon,
        timeout=240_000,
    )


def texts(page, cls: str) -> list[str]:
    return page.eval_on_selector_all(f"#use-plot .{cls}", "es => es.map(e => e.textContent)")


def test_forecast_chart_has_dated_axes_in_the_datas_units(engine_page, runs):
    page = engine_page
    full_screen(page, False)
    page.set_viewport_size({"width": 1440, "height": 900})
    store, rid = runs["series"]
    pick(page, rid)
    show_forecast(page, 5)
    ds = open_run(store, rid).dataset()
    first, last = ds.times[ds.cut].year, ds.times[-1].year
    assert texts(page, "fc-xlabel") == ["year"] and texts(page, "fc-ylabel") == ["sunspots"]
    years = [int(t) for t in texts(page, "fc-xtick")]
    # the validation range's first year, then the forecast's last one, years between
    assert years[0] == first and years[-1] == last + 5 and years == sorted(years)
    assert len(years) >= 4
    # the y axis: round, evenly spaced values around what is drawn, which is in sunspots
    ys = [float(t) for t in texts(page, "fc-ytick")]
    plot = page.evaluate("window.scellisApp.use.result.plot")
    drawn = [v for _, a, p in plot["past"] for v in (a, p)] + [v for _, v in plot["future"]]
    steps = {round(b - a, 6) for a, b in zip(ys, ys[1:])}
    assert len(ys) >= 3 and len(steps) == 1, ys
    assert ys[0] <= min(drawn) < ys[1] and ys[-2] < max(drawn) <= ys[-1], (ys, drawn)
    raw = {int(r["year"]): float(r["sunspots"]) for r in csv.DictReader(BUNDLED.open())}
    assert [a for _, a, _ in plot["past"]] == [raw[int(d[:4])] for d, _, _ in plot["past"]]
    legend = page.eval_on_selector_all(
        "#use-plot .fc-legend text", "es => es.map(e => e.textContent)"
    )
    assert legend == ["actual", "predicted", "forecast"]
    assert page.locator("#use-plot .fc-point").count() == 5
    show_forecast(page, 9)
    assert page.locator("#use-plot .fc-point").count() == 9
    years = [int(t) for t in texts(page, "fc-xtick")]
    assert years[-1] == last + 9
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(400)  # the chart redraws at its box's new width
        box = page.eval_on_selector("#run-use", "e => e.getBoundingClientRect().right")
        svg = page.eval_on_selector("#use-plot svg", "e => e.getBoundingClientRect().right")
        assert svg <= box + 0.5, (width, svg, box)
        page.locator("#run-use").scroll_into_view_if_needed()
        screenshot(page, f"use_forecast_{width}")


def test_predict_downloads_the_engines_rows(engine_page, runs):
    page = engine_page
    full_screen(page, False)
    store, rid = runs["series"]
    pick(page, rid)
    page.fill("#use-horizon", "7")
    with page.expect_download(timeout=240_000) as got:
        page.click("#use-predict")
    text = open(got.value.path()).read()
    assert got.value.suggested_filename == f"predictions-{rid}.csv"
    rows = list(csv.DictReader(io.StringIO(text)))
    want = native(asyncio.run, predict_run(open_run(store, rid), horizon=7, device="reference"))
    assert text.splitlines()[0] == "date,actual,predicted,horizon"
    assert [(r["date"], r["horizon"]) for r in rows] == [
        (w["date"], str(w["horizon"])) for w in want
    ]
    for r, w in zip(rows, want):
        if w["actual"] is None:
            assert r["actual"] == ""
        else:
            assert float(r["actual"]) == w["actual"]  # the data itself, exactly
        assert float(r["predicted"]) == pytest.approx(w["predicted"], **CLOSE)
    assert sum(1 for w in want if w["actual"] is None) == 7


def generate_in_tab(page, prompt: str, **kw) -> dict:
    page.fill("#gen-prompt", prompt)
    page.fill("#gen-temperature", str(kw["temperature"]))
    page.fill("#gen-top-k", str(kw["top_k"]))
    page.fill("#gen-top-p", str(kw.get("top_p", 1)))
    page.fill("#gen-length", str(kw["max_new"]))
    page.fill("#gen-seed", str(kw["seed"]))
    page.evaluate("window.scellisApp.use.generator.last = null")
    page.click("#gen-go")
    page.wait_for_function("window.scellisApp.use.generator.last", timeout=240_000)
    return page.evaluate("window.scellisApp.use.generator.last")


def test_generation_box_is_the_native_generator_and_stops(engine_page, runs):
    page = engine_page
    full_screen(page, False)
    store, rid = runs["lm"]
    pick(page, rid)
    got = generate_in_tab(page, "abc", **SAMPLING)
    lm = text_run(open_run(store, rid), "reference")
    want = native(asyncio.run, lm.text("abc", **SAMPLING))
    assert got["generated"] == want and len(got["ids"]) == SAMPLING["max_new"]
    assert page.inner_text("#gen-output .generated") == want
    greedy = {**SAMPLING, "temperature": 0}
    got = generate_in_tab(page, "hea", **greedy)
    assert got["generated"] == native(asyncio.run, lm.text("hea", **greedy))
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#run-use").scroll_into_view_if_needed()
        screenshot(page, f"use_generate_{width}")
    # every field of the box has a visible label and a name (axe-core)
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("axe.run('#run-use', {resultTypes: ['violations']})")
    bad = [(v["id"], v["impact"]) for v in found["violations"] if v["impact"] in SERIOUS]
    assert not bad, bad
    # a long generation: Stop ends it at the next token
    page.fill("#gen-length", "2000")
    page.evaluate("window.scellisApp.use.generator.last = null")
    page.click("#gen-go")
    page.wait_for_function(
        "document.querySelector('#gen-output .generated').textContent.length >= 3",
        timeout=120_000,
    )
    t0 = time.monotonic()
    page.click("#gen-stop")
    page.wait_for_function("window.scellisApp.use.generator.last", timeout=30_000)
    waited = time.monotonic() - t0
    end = page.evaluate("window.scellisApp.use.generator.last")
    assert end["stopped"] is True and 3 <= len(end["ids"]) < 2000
    assert waited < 10, f"Stop took {waited:.1f}s"
    assert "stopped after" in page.inner_text("#use-message")
    # starting a training run stops a generation as its Stop does (the panel's busy)
    page.evaluate("window.scellisApp.use.generator.last = null")
    page.click("#gen-go")
    page.wait_for_function(
        "document.querySelector('#gen-output .generated').textContent.length >= 3",
        timeout=120_000,
    )
    page.evaluate("window.scellisApp.use.setBusy(true)")
    page.wait_for_function("window.scellisApp.use.generator.last", timeout=30_000)
    assert page.evaluate("window.scellisApp.use.generator.last.stopped") is True
    assert page.is_disabled("#gen-go") and page.is_disabled("#use-forecast")
    page.evaluate("window.scellisApp.use.setBusy(false)")
    # the box names its bound
    page.fill("#gen-length", "2001")
    page.click("#gen-go")
    assert "from 1 to 2000" in page.inner_text("#use-message")


def test_generation_box_top_p_is_the_native_generators(engine_page, runs):
    """top-p (nucleus) goes to the engine's generator: the tab's text equals
    ``run.generate``'s natively with the same seed and top_p; a value outside (0, 1]
    is one line, and the field has a visible label."""
    page = engine_page
    full_screen(page, False)
    page.set_viewport_size({"width": 1024, "height": 900})
    store, rid = runs["lm"]
    pick(page, rid)
    lm = text_run(open_run(store, rid), "reference")
    nucleus = {**SAMPLING, "top_k": 0, "top_p": 0.6, "temperature": 1.3, "seed": 5}
    got = generate_in_tab(page, "abc", **nucleus)
    kw = {**nucleus, "top_k": None}
    want = native(asyncio.run, lm.text("abc", **kw))
    assert got["generated"] == want and len(got["ids"]) == nucleus["max_new"]
    # the cut acts: every token kept (top_p 1) samples another text from the same seed
    everything = native(asyncio.run, lm.text("abc", **{**kw, "top_p": None}))
    assert everything != want
    label = page.locator("label.run-opt", has=page.locator("#gen-top-p"))
    assert label.is_visible() and label.inner_text().strip().startswith("top-p")
    for width in (412, 1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#gen-top-p").scroll_into_view_if_needed()
        screenshot(page, f"use_generate_top_p_{width}")
    for bad in ("0", "1.5", "-0.2"):
        page.fill("#gen-top-p", bad)
        page.click("#gen-go")
        assert "top-p must be a number above 0 and at most 1" in page.inner_text("#use-message")
    page.fill("#gen-top-p", "1")


def test_a_run_trained_in_the_tab_is_picked_and_forecast_by_step(engine_page, runs, tmp_path):
    """A run just trained in the tab becomes the panel's, its forecast drawn; the example
    has no datetime column, so its chart runs on row numbers. Its forecast is
    the one its bundle, brought back to this process, forecasts natively."""
    page = engine_page
    full_screen(page, False)
    page.set_viewport_size({"width": 1440, "height": 900})
    opts = dict(max_steps=3, log_every=1, samples=False, validate=False, drop_last=True)
    # a long forecast still on its way when Train is pressed: both finish, the run trains
    pick(page, runs["series"][1])
    page.fill("#use-horizon", "300")
    page.click("#use-forecast")
    start_training(page, opts, "lstm_forecaster")
    assert page.is_disabled("#use-forecast")  # the engine trains: predictions wait
    finish_training(page, timeout_ms=300_000)
    page.wait_for_selector("#use-plot svg .fc-point", timeout=120_000)
    rid = page.evaluate("window.scellisApp.run.runId")
    page.wait_for_function(
        "rid => (window.scellisApp.use.info || {}).run === rid", arg=rid, timeout=60_000
    )
    assert page.input_value("#use-run") == rid
    # a forecaster just trained draws its forecast without being asked
    page.wait_for_selector("#use-plot svg .fc-point", timeout=120_000)
    show_forecast(page, 4)
    assert texts(page, "fc-xlabel") == ["time step (row)"]
    assert texts(page, "fc-ylabel") == ["sunspots"]
    steps = [float(t) for t in texts(page, "fc-xtick")]
    assert all(s == int(s) for s in steps) and steps == sorted(steps)
    future = page.evaluate("window.scellisApp.use.result.plot.future")
    b64 = page.evaluate(
        f"window.scellisClient.call('export_run', {{run: '{rid}', store: '{STORE}'}})"
    )
    objects, records = ObjectStore(tmp_path), Records(tmp_path)
    try:
        bundle.import_run(objects, records, base64.b64decode(b64))
    finally:
        records.close()
    want = native(asyncio.run, predict_run(open_run(tmp_path, rid), horizon=4, device="reference"))
    rows = open_run(tmp_path, rid).dataset().rows
    assert [d for d, _ in future] == [rows - 1 + k for k in range(1, 5)]
    assert [v for _, v in future] == pytest.approx([w["predicted"] for w in want[-4:]], **CLOSE)
    assert steps[-1] <= rows + 3
    page.locator("#run-use").scroll_into_view_if_needed()
    screenshot(page, "use_forecast_by_step_1440")
