"""The front end reads the engine's schemas: the committed schema files are what the
engine's classes make, and the run panel handles every event kind they list and shows
a control for every run option (run under node, on the panel's own modules)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from scellis.run.options import schema_text as options_schema
from scellis.train.events import KINDS
from scellis.train.events import schema_text as events_schema

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "web" / "src" / "run"
REGENERATE = "regenerate with: .venv/bin/python scripts/web_schemas.py"


@pytest.mark.parametrize("name, make", [("events", events_schema), ("options", options_schema)])
def test_committed_schema_is_the_engines(name, make):
    assert (RUN / f"{name}.schema.json").read_text() == make(), REGENERATE


def _check(events: Path, options: Path) -> dict:
    node = shutil.which("node")
    assert node, "node is needed for the front-end checks"
    out = subprocess.run(
        [node, "run_panel_check.mjs", str(events), str(options)],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_run_panel_handles_every_event_kind_and_option():
    got = _check(RUN / "events.schema.json", RUN / "options.schema.json")
    assert got == {"problems": [], "kinds": len(KINDS)}


def test_the_check_fails_for_a_kind_the_panel_does_not_handle(tmp_path):
    events = json.loads((RUN / "events.schema.json").read_text())
    events["$defs"]["forecast_ready"] = {"type": "object", "properties": {"kind": {}}}
    options = json.loads((RUN / "options.schema.json").read_text())
    options.append({"name": "warmup", "kind": "int", "default": 3, "nullable": False,
                    "low": 1, "above": None, "doc": "new"})  # fmt: skip
    (tmp_path / "e.json").write_text(json.dumps(events))
    (tmp_path / "o.json").write_text(json.dumps(options))
    got = _check(tmp_path / "e.json", tmp_path / "o.json")
    assert "no handler for event kind forecast_ready" in got["problems"]
    assert "no control for warmup" not in got["problems"]  # made from the schema itself
