"""The tab's run store on the reference device: a run trained through the worker API is
recorded and checkpointed; a process that dies mid-run leaves it ``interrupted``; the
tab's resume and the native ``scellis resume`` both continue it from its checkpoint."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.store.records import Records
from scellis.webapp import api, run_api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"
SRC = Path(__file__).resolve().parents[2] / "src"
OPTS = dict(device="reference", max_steps=8, log_every=1, samples=False, validate=False)

DIE_AT_4 = """
import asyncio, json, os, sys
from scellis.webapp import api
async def go():
    args = json.loads(sys.argv[1])
    async for e in api.dispatch("train", json.dumps(args)):
        if e["kind"] == "checkpoint" and e["step"] == 4:
            os._exit(0)  # the tab dies: no finally, no finish
asyncio.run(go())
"""


def _events(cmd: str, **args) -> list[dict]:
    async def go():
        return [e async for e in api.dispatch(cmd, json.dumps(args))]

    return asyncio.run(go())


def _die_at_4(store: Path) -> None:
    args = {"record_text": EXAMPLE.read_text(), "store": str(store), "checkpoint_every": 2, **OPTS}
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    subprocess.run([sys.executable, "-c", DIE_AT_4, json.dumps(args)], check=True, env=env,
                   timeout=300)  # fmt: skip


def test_a_tab_run_is_recorded_and_checkpointed(tmp_path):
    store = tmp_path / "st"
    evs = _events("train", record_text=EXAMPLE.read_text(), store=str(store),
                  checkpoint_every=3, **OPTS)  # fmt: skip
    cks = [e["step"] for e in evs if e["kind"] == "checkpoint"]
    assert cks == [3, 6, 8]
    rid = next(e["run"] for e in evs if e["kind"] == "progress")
    records = Records(store)
    try:
        run = records.run(rid)
        assert run["status"] == "done" and run["step"] == 8
        assert run["config"]["options"]["checkpoint_every"] == 3
        logged = [s for s, _ in records.metrics(rid)]
        assert logged == list(range(1, 9))
        assert [c["step"] for c in records.checkpoints(rid)][-1] == 8
    finally:
        records.close()


def test_dead_tab_reads_interrupted_and_tab_resume_matches_uninterrupted(tmp_path):
    whole = _events("train", record_text=EXAMPLE.read_text(), store=str(tmp_path / "w"),
                    checkpoint_every=2, **OPTS)  # fmt: skip
    store = tmp_path / "st"
    _die_at_4(store)
    (run,) = run_api.runs(str(store))
    assert run["status"] == "interrupted" and run["checkpoint_step"] == 4
    evs = _events("resume", run=run["id"], store=str(store), device="reference")
    assert evs[0] == {"kind": "resume", "run": run["id"], "step": 4, "skipped": []}
    resumed = [(e["step"], e["loss"]) for e in evs if e["kind"] == "log"]
    expect = [(e["step"], e["loss"]) for e in whole if e["kind"] == "log"][4:]
    assert [s for s, _ in resumed] == [5, 6, 7, 8]
    # reference device, debug-or-prod tier on the same host: the same losses
    for (_, a), (_, b) in zip(resumed, expect):
        assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), (resumed, expect)
    assert run_api.runs(str(store))[0]["status"] == "done"


def test_native_resume_continues_a_tab_run(tmp_path, capsys):
    store = tmp_path / "st"
    _die_at_4(store)
    rc = main(["resume", "last", "--store", str(store), "--device", "reference", "--json"])
    assert rc == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert lines[0]["step"] == 4
    assert [x["step"] for x in lines if x["kind"] == "log"] == [5, 6, 7, 8]
    records = Records(store)
    try:
        (run,) = records.runs()
        assert run["status"] == "done" and run["step"] == 8
    finally:
        records.close()


def test_bundle_from_the_tab_resumes_natively_and_back(tmp_path, capsys):
    tab = tmp_path / "tab"
    _die_at_4(tab)
    (run,) = run_api.runs(str(tab))
    args = json.dumps({"run": run["id"], "store": str(tab)})
    data = base64.b64decode(api.dispatch("export_run", args))
    assert data == base64.b64decode(run_api.export_run(run["id"], str(tab)))  # deterministic
    f = tmp_path / "run.tar"
    f.write_bytes(data)
    native = tmp_path / "native"
    assert main(["runs", "import", str(f), "--store", str(native), "--json"]) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert got["run"] == run["id"] and got["status"] == "interrupted"
    # the same bundle twice is refused, one clear line
    assert main(["runs", "import", str(f), "--store", str(native)]) == 2
    assert "already in" in capsys.readouterr().err
    assert main(["resume", run["id"], "--store", str(native), "--device", "reference",
                 "--to-step", "6", "--json"]) == 0  # fmt: skip
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [x["step"] for x in lines if x["kind"] == "log"] == [5, 6]
    # and back: the natively continued run, exported by the CLI, resumes in the tab
    back = tmp_path / "back.tar"
    assert main(["runs", "export", run["id"], "--store", str(native), "-o", str(back)]) == 0
    tab2 = tmp_path / "tab2"
    b64 = base64.b64encode(back.read_bytes()).decode()
    assert api.dispatch("import_run", json.dumps({"data": b64, "store": str(tab2)})) == run["id"]
    (r2,) = run_api.runs(str(tab2))
    assert r2["checkpoint_step"] == 6 and r2["status"] == "done"


def test_a_damaged_bundle_is_refused(tmp_path):
    tab = tmp_path / "tab"
    _die_at_4(tab)
    (run,) = run_api.runs(str(tab))
    data = bytearray(base64.b64decode(run_api.export_run(run["id"], str(tab))))
    i = data.rfind(b"objects/") + 700  # inside the last object's bytes
    data[i] ^= 0xFF
    b64 = base64.b64encode(bytes(data)).decode()
    with pytest.raises(ScellisError, match="hashes to|not a"):
        run_api.import_run(b64, str(tmp_path / "other"))
