"""Model View in headless Chromium: graph, form and code of one record stay in sync.

The page, its worker and the Python engine (in Pyodide) are the real ones; every check
reads what the page shows (the CodeMirror text, the SVG graph, the form inputs).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from scellis.webapp import model_api

from .conftest import ARTIFACTS, screenshot
from .ui import set_record, ui_page

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("lstm_forecaster", "char_transformer")
EXAMPLES = {n: (ROOT / "examples" / f"{n}.sml").read_text() for n in NAMES}


@pytest.fixture
def page(engine_page):
    return ui_page(engine_page, True)


def load(page, name: str) -> None:
    set_record(page, EXAMPLES[name])


def code_text(page) -> str:
    return page.evaluate("window.scellisApp.modelView.code.text")


def node_shape(page, block: str) -> str:
    return page.text_content(f".mv-node[data-id='{block}'] .mv-node-shape")


def edges(page) -> set:
    pairs = page.eval_on_selector_all(
        ".mv-edge", "es => es.map(e => [e.dataset.from, e.dataset.to])"
    )
    return {tuple(p) for p in pairs}


def comments(text: str) -> list[str]:
    return [ln[ln.index("#") :] for ln in text.splitlines() if "#" in ln]


def wait_code(page, needle: str) -> None:
    """Until the worker's answer (not only the optimistic text) has the needle, rendered."""
    page.wait_for_function(
        "s => { const mv = window.scellisApp.modelView;"
        " return mv.result && mv.result.text.includes(s) && mv.code.text === mv.result.text"
        " && !document.querySelector('#model-view').dataset.busy; }",
        arg=needle,
    )


def test_form_edit_updates_code_and_graph(page):
    load(page, "lstm_forecaster")
    size = random.Random(11).randint(40, 99)
    page.fill("#mv-f-lstm-hidden_size", str(size))
    page.press("#mv-f-lstm-hidden_size", "Enter")
    wait_code(page, f"hidden_size: {size}\n")
    text = code_text(page)
    assert comments(text) == comments(EXAMPLES["lstm_forecaster"])
    assert text == EXAMPLES["lstm_forecaster"].replace("hidden_size: 32", f"hidden_size: {size}")
    assert node_shape(page, "lstm") == f"[batch, {size}]"
    # the head still reads 32 features: the graph marks it, the problem list says why
    assert "mv-bad" in page.get_attribute(".mv-node[data-id='head']", "class")
    assert "expects last dim 32" in page.text_content(".mv-problems")
    page.fill("#mv-f-head-in_features", str(size))
    page.press("#mv-f-head-in_features", "Enter")
    page.wait_for_function("document.querySelector('.mv-status').textContent === 'valid'")
    assert "mv-bad" not in page.get_attribute(".mv-node[data-id='head']", "class")
    screenshot(page, "model_view_form_edit")


def test_form_checks_a_value_before_sending(page):
    load(page, "lstm_forecaster")
    page.fill("#mv-f-lstm-dropout", "2.5")  # the schema's max is 1
    row = page.locator(".mv-field[data-field='dropout']").first
    assert "invalid" in row.get_attribute("class")
    assert "must be <= 1" in page.text_content(".mv-field[data-field='dropout'] .mv-msg")
    page.press("#mv-f-lstm-dropout", "Enter")
    page.wait_for_timeout(300)
    assert code_text(page) == EXAMPLES["lstm_forecaster"]  # nothing was sent


def test_code_edit_updates_form_and_graph(page):
    load(page, "lstm_forecaster")
    line = page.locator(".cm-line", has_text="n_outputs: 1")
    line.click()
    page.keyboard.press("End")
    # the line ends in a comment: move to just after the "1"
    text = line.text_content()
    for _ in range(len(text) - text.index("1") - 1):
        page.keyboard.press("ArrowLeft")
    page.keyboard.press("Backspace")
    page.keyboard.type("3")
    page.wait_for_function("document.querySelector('#mv-f-head-n_outputs').value === '3'")
    assert node_shape(page, "head") == "[batch, 3]"
    assert "n_outputs: 3        # one year ahead" in code_text(page)


def test_bad_code_shows_its_error_in_place(page):
    load(page, "lstm_forecaster")
    page.locator(".cm-line", has_text="hidden_size: 32").click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.type("hidden_size: 8")  # a duplicate key on the new line
    lines = code_text(page).splitlines()
    bad = next(i for i, ln in enumerate(lines) if ln.strip() == "hidden_size: 8") + 1
    col = lines[bad - 1].index("h") + 1
    page.wait_for_function(
        "document.querySelector('.mv-status').textContent.includes('duplicate key')"
    )
    status = page.text_content(".mv-status")
    assert status.startswith(f"{bad}:{col}: duplicate key 'hidden_size'"), status
    # CodeMirror marks the token at that line:col, and the graph and form go stale
    page.wait_for_selector(".cm-lintRange-error")
    mark_line = page.evaluate(
        "() => { const v = window.scellisApp.modelView.code.view;"
        " const m = document.querySelector('.cm-lintRange-error');"
        " return v.state.doc.lineAt(v.posAtDOM(m)).number; }"
    )
    assert mark_line == bad
    assert page.locator(".cm-lint-marker-error").count() >= 1
    assert "mv-stale" in page.get_attribute("#model-view", "class")
    screenshot(page, "model_view_code_error")
    page.keyboard.press("Control+z")
    page.wait_for_function("document.querySelector('.mv-status').textContent === 'valid'")
    assert "mv-stale" not in page.get_attribute("#model-view", "class")


def test_rewire_in_the_graph(page):
    load(page, "char_transformer")
    assert ("pos", "body") in edges(page)
    # the picker: the selected block reads another earlier block
    page.click(".mv-node[data-id='body']")
    page.select_option(".mv-rewire-select", "tok")
    page.wait_for_function("() => [...document.querySelectorAll('.mv-edge')].some("
                           "e => e.dataset.from === 'tok' && e.dataset.to === 'body')")  # fmt: skip
    text = code_text(page)
    assert re.search(r"  body:\n    block_id: nn/transformer\n    in: tok\n", text)
    assert ("pos", "body") not in edges(page)
    # dragging from a node's output port onto a block: head reads tok
    port = page.locator(".mv-node[data-id='tok'] .mv-port").bounding_box()
    head = page.locator(".mv-node[data-id='head'] rect").bounding_box()
    page.mouse.move(port["x"] + port["width"] / 2, port["y"] + port["height"] / 2)
    page.mouse.down()
    page.mouse.move(head["x"] + 40, head["y"] + 20, steps=8)
    page.mouse.up()
    wait_code(page, "  head:\n    block_id: nn/lm_head\n    in: tok\n")
    assert ("tok", "head") in edges(page) and ("body", "head") not in edges(page)
    assert comments(code_text(page)) == comments(EXAMPLES["char_transformer"])
    screenshot(page, "model_view_rewire")


def test_add_a_block_from_the_catalog_then_wire_it(page):
    load(page, "char_transformer")
    page.wait_for_selector(".mv-add")  # the catalog arrived from the worker
    page.fill(".mv-add-name", "drop")
    page.select_option(".mv-add-kind", "nn/dropout")
    page.select_option(".mv-add-after", "pos")
    page.click(".mv-add-btn")
    page.wait_for_selector(".mv-node[data-id='drop']")
    assert node_shape(page, "drop") == "[batch, 32, 64]"
    assert ("pos", "drop") in edges(page) and ("pos", "body") in edges(page)
    assert "  drop:\n    block_id: nn/dropout\n    in: pos\n" in code_text(page)
    page.wait_for_selector(".mv-card[data-block='drop'] #mv-f-drop-p")
    page.click(".mv-node[data-id='body']")
    page.select_option(".mv-rewire-select", "drop")
    wait_code(page, "    block_id: nn/transformer\n    in: drop\n")
    assert ("drop", "body") in edges(page) and ("pos", "body") not in edges(page)
    page.wait_for_function("document.querySelector('.mv-status').textContent === 'valid'")
    screenshot(page, "model_view_added_block")


def test_rename_and_remove_from_the_form(page):
    load(page, "lstm_forecaster")
    page.fill("input[aria-label='name of block lstm']", "encoder")
    page.press("input[aria-label='name of block lstm']", "Enter")
    wait_code(page, "  encoder:\n")
    text = code_text(page)
    assert "    in: encoder\n" in text and "lstm:" not in text  # the head follows the rename
    assert ("window", "encoder") in edges(page) and ("encoder", "head") in edges(page)
    page.click("button[title='remove block head']")
    wait_code(page, "outputs: [head]")
    page.wait_for_function("() => !document.querySelector(\".mv-node[data-id='head']\")")
    # the outputs still name the removed block: said in place, at its line:col
    problems = page.text_content(".mv-problems")
    lines = code_text(page).splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if ln.startswith("outputs"))
    assert f"{line}:11" in problems and "output 'head' names no block or input" in problems


def _edits(name: str, n: int):
    """n form edits of one numeric field, alternating values (so each one changes text)."""
    block, field, base = {
        "lstm_forecaster": ("lstm", "hidden_size", 32),
        "char_transformer": ("body", "num_layers", 2),
    }[name]
    return block, field, [base + 1 + (i % 7) for i in range(n)]


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, max(0, -(-len(xs) * p // 100) - 1))], 2)


def test_edit_to_all_views_latency(page):
    report = {}
    for name in EXAMPLES:
        load(page, name)
        before = len(page.evaluate("window.scellisApp.modelView.latencies"))
        predicted0 = len(page.evaluate("window.scellisApp.modelView.predicted"))
        block, field, values = _edits(name, 50)
        sel = f"#mv-f-{block}-{field}"
        for v in values:
            page.fill(sel, str(v))
            page.press(sel, "Enter")
            page.wait_for_function(
                "([s, n]) => window.scellisApp.modelView.latencies.length >= n"
                " && window.scellisApp.modelView.code.text.includes(s)",
                arg=[f"{field}: {v}\n", before + 1],
            )
            before += 1
        lat = page.evaluate("window.scellisApp.modelView.latencies.slice(-50)")
        pred = page.evaluate("window.scellisApp.modelView.predicted").__getitem__(
            slice(predicted0, None)
        )
        # the text shown is what the Python edit produces natively for the same edit
        want = model_api.edit(EXAMPLES[name], {"kind": "set_field", "block": block,
                                               "field": field, "value": values[-1]})  # fmt: skip
        assert code_text(page) == want["text"]
        assert len(lat) == 50 and all(x["kind"] == "set_field" for x in lat)
        # every one of these edits was predicted on the UI thread, and the prediction
        # was right: the worker's text equals it (checked above for the last one)
        assert len(pred) == 50
        report[name] = {
            "n": len(lat),
            "all_views_p50_ms": _pct([x["ms"] for x in lat], 50),
            "all_views_p95_ms": _pct([x["ms"] for x in lat], 95),
            "worker_round_trip_p50_ms": _pct([x["worker_ms"] for x in lat], 50),
            "to_python_p50_ms": _pct([x["there_ms"] for x in lat], 50),
            "back_to_page_p50_ms": _pct([x["back_ms"] for x in lat], 50),
            "python_p50_ms": _pct([x["py_ms"] for x in lat], 50),
            "python_p95_ms": _pct([x["py_ms"] for x in lat], 95),
            "optimistic_code_p50_ms": _pct([x["ms"] for x in pred], 50),
            "optimistic_code_p95_ms": _pct([x["ms"] for x in pred], 95),
        }
        # code edits: typed text (a CodeMirror change) -> form and graph, after the
        # 120 ms typing pause (not counted: the clock starts when the projection is sent)
        n0 = len(page.evaluate("window.scellisApp.modelView.latencies"))
        for i in range(20):
            v = values[i] + 10
            page.evaluate(
                r"""([f, v]) => { const view = window.scellisApp.modelView.code.view;
                  const text = view.state.doc.toString();
                  const m = new RegExp("(" + f + ": )(\\d+)").exec(text);
                  const from = m.index + m[1].length;
                  view.dispatch({changes: {from, to: from + m[2].length, insert: String(v)}}); }""",
                [field, v],
            )
            page.wait_for_function(
                "([sel, v]) => document.querySelector(sel).value === v"
                " && !document.querySelector('#model-view').dataset.busy",
                arg=[sel, str(v)],
            )
        code = [x for x in page.evaluate("window.scellisApp.modelView.latencies")[n0:]]
        assert len(code) == 20 and all(x["kind"] == "code" for x in code)
        report[name]["code_edit_all_views_p50_ms"] = _pct([x["ms"] for x in code], 50)
        report[name]["code_edit_all_views_p95_ms"] = _pct([x["ms"] for x in code], 95)
        report[name]["code_edit_python_p50_ms"] = _pct([x["py_ms"] for x in code], 50)
    print("\nModel View latency over 50 form edits (and 20 code edits) per example (ms):")
    for name, r in report.items():
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in r.items()))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "model_view_latency.json").write_text(json.dumps(report, indent=2))
