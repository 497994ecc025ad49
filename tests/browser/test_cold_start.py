"""The tab's Python start: restored from the site build's memory snapshot, or afresh.

The site build ships ``wheels/snapshot.bin`` (Pyodide's memory with the wheels installed
and the engine's modules imported); the worker restores it and says so in its ``hello``
(``boot_path``). A snapshot that cannot be used (cut short here) must cost only the time
it would have saved: the worker starts Python afresh, says why, and the engine works.
"""

from __future__ import annotations

import shutil

import pytest

from scellis.cli.serve import serve_in_thread

from .conftest import open_engine_page

pytestmark = pytest.mark.browser

HELLO = "window.scellisClient.ready()"
# a command that traces the record's model on the null device (imported when first asked)
PLAN = (
    "async () => { const t = await (await fetch('examples/lstm_forecaster.sml')).text();"
    " return await window.scellisClient.call('plan', {record_text: t}); }"
)


def test_the_engine_starts_from_the_snapshot(engine_page):
    hello = engine_page.evaluate(HELLO)
    assert hello["boot_path"] == {"from": "snapshot", "snapshot_error": None}
    marks = dict(hello["boot_marks"])
    # the snapshot arrived and Python was restored before the engine's modules were asked for
    assert marks["snapshot:fetched"] <= marks["pyodide:loaded"] <= marks["python:api"]
    assert hello["device"].startswith("webgpu")
    assert engine_page.evaluate(PLAN)


def test_a_broken_snapshot_falls_back_to_a_fresh_start(contexts, site_dir, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(site_dir, site)
    snapshot = site / "wheels" / "snapshot.bin"
    snapshot.write_bytes(snapshot.read_bytes()[: 1 << 20])
    server = serve_in_thread(site)
    try:
        _, _, page = open_engine_page(contexts, f"http://127.0.0.1:{server.server_port}/")
        hello = page.evaluate(HELLO)
        assert hello["boot_path"]["from"] == "fresh"
        assert hello["boot_path"]["snapshot_error"], hello["boot_path"]
        assert page.evaluate(PLAN)
    finally:
        server.shutdown()
        server.server_close()
