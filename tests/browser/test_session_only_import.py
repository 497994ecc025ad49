"""An imported model too large for browser storage (here: over a lowered limit, as a
2 GiB one is over the real one) is kept in the tab's memory only: the import's line says
so once, the store keeps being written back (a run trained after it is listed after a
reload, and the status line never says a save failed), and after the reload the page
says the weights are gone and a forward of the record says why. Its own profile.
Screenshots at desktop and phone widths."""

from __future__ import annotations

import pytest

from tinymodels import onnx_file, torch

from .conftest import finish_training, open_engine_page, screenshots_at, start_training, wait_engine
from .test_import_tab import _import

pytestmark = pytest.mark.browser

LIMIT = 128 << 10  # over every object an example's run writes, under the model's weights
SAID = "too large for browser storage, so kept in this tab's memory until it closes"


def _wide(path):
    """An MLP of about 68K parameters (265 KiB of f32 weights) as torch exports it."""
    torch.manual_seed(5)
    net = torch.nn.Sequential(torch.nn.Linear(4, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                              torch.nn.ReLU(), torch.nn.Linear(256, 3))  # fmt: skip
    return onnx_file(net, torch.randn(2, 4), path)


def test_weights_too_large_to_keep_last_the_session_and_the_store_stays_healthy(
    contexts, site_url, tmp_path
):
    ctx, _, page = open_engine_page(contexts, site_url, viewport={"width": 1440, "height": 900})
    page.evaluate(f"window.scellisClient.call('bench_keep_limit', {{limit: {LIMIT}}})")
    tab = _import(page, ".import-files-input", [str(_wide(tmp_path / "wide.onnx"))])
    assert tab["error"] is None, tab["error"]
    assert tab["status"].count(SAID) == 1, tab["status"]
    assert "after a reload, import wide.onnx again" in tab["status"]
    record = tab["last"]["record"]
    screenshots_at(page, "session_only_import")

    start_training(page, dict(max_steps=2, checkpoint_every=1, log_every=1, samples=False,
                              validate=False), "lstm_forecaster")  # fmt: skip
    finish_training(page, timeout_ms=300_000)
    rid = next(e["run"] for e in page.evaluate("window.scellisApp.run.events") if e.get("run"))
    status = page.inner_text("#engine-status")
    assert "could not save" not in status and SAID not in status  # said once, by the import

    page.reload()
    wait_engine(page)
    page.wait_for_selector(f"#run-runs tr[data-run='{rid}']", timeout=60_000)  # kept
    banner = page.inner_text("#banner")
    assert "the weights of wide.onnx" in banner and "import wide.onnx again" in banner
    assert "could not save" not in page.inner_text("#engine-status")
    screenshots_at(page, "session_only_reload")
    said = page.evaluate(
        "t => window.scellisClient.call('forward', {record_text: t}).then(() => 'ran',"
        " e => e.message)",
        record,
    )
    assert said.startswith("the weights of wide.onnx (") and "import wide.onnx again" in said
    ctx.close()
