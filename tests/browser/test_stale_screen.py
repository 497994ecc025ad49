"""Nothing stale on screen in the tab: what the page shows follows what the user did.

The data panel's prompt names its button's own label; a picked example shows its own
data, never an earlier file's; a text file pinned on a forecaster trains the char
Transformer, as the drop zone promises; a failed run's banner and the speed
measurement's hint go once they no longer hold; compared runs read apart and fit the
window; a narrow window keeps labels, the runs table and generated text in their boxes;
a reload during a resumed run shows the step it reached and the run's own max steps.
The oracles: the bundled files read natively, the engine's own run list, the DOM's
geometry. Screenshots at 1440 and 412 px go to tests/artifacts/.
"""

from __future__ import annotations

import random
import re
import string
from concurrent.futures import ThreadPoolExecutor

import pytest

from scellis.data.record import BUNDLED

from .conftest import finish_training, open_engine_page, screenshot, start_training, wait_engine
from .test_use_tab import bring, pick
from .ui import set_record

pytestmark = pytest.mark.browser

WIDE, NARROW = {"width": 1440, "height": 900}, {"width": 412, "height": 900}
RUN_MS = 300_000
SHORT = dict(max_steps=3, log_every=1, eval_every=3, samples=False, checkpoint_every=3)


@pytest.fixture(scope="module")
def tab(contexts, site_url):
    """One fresh profile for the module (a fresh profile: no GPU speed measured yet)."""
    return open_engine_page(contexts, site_url, viewport=WIDE)


def _pick_file(page, tmp_path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    page.set_input_files(".dp-file", str(path))
    page.wait_for_function(
        "n => document.querySelector('.dp-name').textContent === n"
        " && !document.querySelector('.dp-loaded').hidden",
        arg=name,
        timeout=60_000,
    )


def _prompted(page) -> str:
    """The label the data panel's line asks the user to press (between “ and ”)."""
    found = re.search(r"“([^”]+)”", page.inner_text(".dp-current"))
    return found.group(1) if found else ""


def _pick_example(page, name: str) -> None:
    page.select_option("#run-example", name)
    page.wait_for_function("n => window.scellisApp.recordName === n", arg=name)


def _own_shown(page, name: str) -> None:
    page.wait_for_function(
        "n => !document.querySelector('.dp-own').hidden"
        " && document.querySelector('.dp-own-name').textContent === n",
        arg=name,
        timeout=60_000,
    )


def _pin(page) -> None:
    """Press the data panel's button and wait for the pin (or its error, then fail)."""
    page.click(".dp-use")
    page.wait_for_function(
        "document.querySelector('.dp-use').textContent === 'Pin again'"
        " || document.querySelector('.dp-error').textContent",
        timeout=120_000,
    )
    assert page.text_content(".dp-error") == ""


def _series_csv(rng: random.Random) -> str:
    rows = [f"{2000 + i}-01-01,{rng.uniform(10, 90):.3f}" for i in range(80)]
    return "date,level\n" + "\n".join(rows) + "\n"


def test_data_panel_follows_the_file_and_the_example(tab, tmp_path):
    page = tab[2]
    rng = random.Random(5)
    sunspots = (BUNDLED / "sunspots_yearly.csv").read_text().splitlines()
    help_text = (BUNDLED / "python_help_topics.txt").read_text()
    # the example's own data before any file is picked: the bundled file's header
    _own_shown(page, "sunspots_yearly.csv")
    head = page.eval_on_selector_all(".dp-own-table th", "t => t.map(e => e.textContent)")
    assert head == sunspots[0].split(",")

    # the prompt names the button as it reads, before and after a pin, and for a second file
    _pick_file(page, tmp_path, "first.csv", _series_csv(rng))
    assert page.is_hidden(".dp-own")
    assert _prompted(page) == page.inner_text(".dp-use") == "Use in record"
    _pin(page)
    _pick_file(page, tmp_path, "second.csv", _series_csv(rng))
    assert _prompted(page) == page.inner_text(".dp-use"), page.inner_text(".dp-current")

    # another example: the earlier file's preview goes, the new example's data shows,
    # and the quick-run hint says what Train will do
    for example, own in (("tcn_forecaster", "sunspots_yearly.csv"),
                         ("char_transformer", "python_help_topics.txt")):  # fmt: skip
        _pick_example(page, example)
        _own_shown(page, own)
        assert page.is_hidden(".dp-loaded")
        assert "quick run" in page.inner_text("#run-hint"), example
    assert page.text_content(".dp-own-text") == help_text[:400]
    assert page.is_hidden(".dp-own-chart") and page.is_hidden(".dp-own-table")
    screenshot(page, "stale_example_data_1440")

    # a text file on the forecaster: the char Transformer trains it, and a note says so
    _pick_example(page, "lstm_forecaster")
    words = " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 8)))
                     for _ in range(400))  # fmt: skip
    _pick_file(page, tmp_path, "notes.txt", words)
    assert "char Transformer" in page.inner_text(".dp-current")
    _pin(page)
    assert page.input_value("#run-example") == "char_transformer"
    assert page.evaluate("window.scellisApp.recordName") == "char_transformer"
    assert "notes.txt" in page.evaluate("window.scellisApp.dataset.source")
    note = page.inner_text(".dp-switched")
    assert "LSTM forecaster" in note and "char Transformer" in note, note
    assert page.inner_text(".dp-name") == "notes.txt"  # the file stays on show
    for size, tag in ((WIDE, "1440"), (NARROW, "412")):
        page.set_viewport_size(size)
        screenshot(page, f"stale_text_on_forecaster_{tag}")
    page.set_viewport_size(WIDE)


def test_failed_run_banner_and_measuring_hint_clear(tab):
    page = tab[2]
    _pick_example(page, "lstm_forecaster")
    good = page.evaluate("window.scellisApp.record")
    # a record that validates (Train stays enabled) but whose run fails: a column the
    # CSV does not have is found only when the data is read
    broken = re.sub(r"(?m)^(\s+column:) \S+", r"\1 no_such_column", good, count=1)
    assert broken != good
    page.evaluate("t => { window.scellisApp.record = t; window.scellisApp.emit('record', t); }",
                  broken)  # fmt: skip
    page.click("#run-train")
    page.wait_for_selector("#banner [data-key='run-error']", timeout=RUN_MS)
    page.wait_for_function("!window.scellisApp.run.running", timeout=RUN_MS)
    assert "training failed" in page.inner_text("#banner [data-key='run-error']")
    assert "measuring" not in page.inner_text("#run-hint")
    assert "quick run" in page.inner_text("#run-hint")
    # the plan box settles (a plan, or why there is none) rather than checking on and on
    page.wait_for_function(
        "(t => t.trim() && !t.includes('checking'))"
        "(document.getElementById('run-plan').textContent)",
        timeout=60_000,
    )
    screenshot(page, "stale_failed_run_1440")
    set_record(page, good)
    page.wait_for_selector("#banner [data-key='run-error']", state="detached", timeout=60_000)


def _train_lm(tmp):
    from generate.genutil import record_text, write_text
    from webapp.test_use_api import train

    write_text(tmp)
    return train(tmp, record_text(context=8))


def test_compare_reads_apart_and_narrow_boxes_hold(tab, tmp_path):
    page = tab[2]
    with ThreadPoolExecutor(1) as pool:  # a language model to generate from, trained natively
        lm = pool.submit(_train_lm, tmp_path)
        ids = []
        for lr in ("0.01", "0.003"):
            text = (page.evaluate("fetch('examples/lstm_forecaster.sml').then(r => r.text())")
                    .replace("lr: 0.01", f"lr: {lr}"))  # fmt: skip
            set_record(page, text)
            start_training(page, SHORT)
            finish_training(page, timeout_ms=RUN_MS)
            ids.append(page.evaluate("window.scellisApp.run.runId"))
        store, lm_id = lm.result()
    # the record edited back to the bundled series: the preview follows its source
    _own_shown(page, "sunspots_yearly.csv")
    listed = {r["id"]: r for r in page.evaluate("window.scellisApp.run.runs.refresh()")}
    a, b = ids
    assert listed[a]["record"] != listed[b]["record"]
    for rid in ids:
        page.check(f"#run-runs tr[data-run='{rid}'] .run-pick")
    page.click("#runs-compare")
    page.wait_for_selector("#runs-past .past-compare")
    heads = page.eval_on_selector_all(".past-compare .past-run", "t => t.map(e => e.innerText)")
    assert len(heads) == 2 and heads[0] != heads[1]
    for rid, head in zip(ids, heads):
        assert rid in head and listed[rid]["record"][:8] in head
    # the differing record hashes: cut short in view, whole on hover, b's column in view
    cells = page.eval_on_selector_all(
        ".past-compare tr",
        "rows => rows.filter(r => r.cells[0].textContent === 'record_hash').map(r =>"
        " [...r.cells].slice(1).map(c => [c.title, c.scrollWidth > c.clientWidth,"
        " c.getBoundingClientRect().right]))",
    )
    assert [[c[0] for c in row] for row in cells] == [[listed[a]["record"], listed[b]["record"]]]
    assert all(c[1] for c in cells[0]), "the hashes are not cut short"
    assert max(c[2] for c in cells[0]) <= 1440
    screenshot(page, "stale_compare_1440")

    bring(page, store, lm_id)
    pick(page, lm_id)
    page.fill("#gen-prompt", "abcdefgh" * 15)  # one long word: it must wrap inside the box
    page.fill("#gen-length", "60")
    page.click("#gen-go")
    page.wait_for_function(
        "document.querySelector('#gen-output .generated').textContent.length >= 60",
        timeout=RUN_MS,
    )
    # every form on show: the data options of a loaded CSV, the folded run options
    _pick_file(page, tmp_path, "third.csv", _series_csv(random.Random(9)))
    page.evaluate("document.getElementById('run-options').open = true")
    page.set_viewport_size(NARROW)
    page.wait_for_timeout(400)
    out = page.evaluate(_OVERFLOW)
    assert out["page"] <= 412, out
    assert not out["cut"], out["cut"]
    screenshot(page, "stale_narrow_412")
    page.set_viewport_size(WIDE)


# labels that end past their panel, boxes whose content runs past them (the runs table
# fits, generated text wraps), and the page's own width
_OVERFLOW = """(() => {
  const cut = [];
  for (const l of document.querySelectorAll('main label, #start-here label')) {
    const box = l.closest('section').getBoundingClientRect(), r = l.getBoundingClientRect();
    if (r.width && (r.right > box.right + 1 || r.left < box.left - 1)) cut.push(l.innerText);
  }
  for (const id of ['run-runs', 'gen-output', 'runs-past']) {
    const e = document.getElementById(id);
    if (e.scrollWidth > e.clientWidth + 1) cut.push(id);
    const box = e.closest('section').getBoundingClientRect(), r = e.getBoundingClientRect();
    if (r.right > box.right + 1) cut.push(id + ' past its panel');
  }
  return { page: document.scrollingElement.scrollWidth, cut };
})()"""


def test_reload_during_a_resumed_run_shows_its_step_and_max_steps(tab):
    ctx, _, page = tab
    _pick_example(page, "lstm_forecaster")
    start_training(page, SHORT, "lstm_forecaster")
    finish_training(page, timeout_ms=RUN_MS)
    rid = page.evaluate("window.scellisApp.run.runId")
    page.wait_for_selector(f"#run-runs tr[data-run='{rid}'][data-status='done']")
    more = random.Random(3).randint(400, 600)  # far more than the run trains before the pause
    page.fill("#run-max-steps", str(more))
    page.click(f"#run-runs tr[data-run='{rid}'] .run-resume")
    page.wait_for_function("Number(document.getElementById('run-step').textContent) >= 6",
                           timeout=RUN_MS)  # fmt: skip
    page.click("#run-pause")
    page.wait_for_function("document.getElementById('run-state').textContent === 'paused'",
                           timeout=RUN_MS)  # fmt: skip
    step = int(page.inner_text("#run-step"))
    page.reload()
    wait_engine(page)
    row = f"#run-runs tr[data-run='{rid}']"
    page.wait_for_selector(f"{row}[data-status='interrupted']", timeout=60_000)
    assert page.inner_text(f"{row} .run-step") == f"{step}/{more}"
    assert page.inner_text("#run-step") == str(step)
    assert page.inner_text("#run-total") == str(more)
    assert page.input_value("#run-max-steps") == str(more)
    assert "Resume" in page.inner_text("#run-state")
    assert f"max steps {more}" in page.inner_text("#run-hint")
    for size, tag in ((WIDE, "1440"), (NARROW, "412")):
        page.set_viewport_size(size)
        screenshot(page, f"stale_reloaded_{tag}")
    page.set_viewport_size(WIDE)
