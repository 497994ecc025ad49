"""The tab worker's command registry: exactly the commands the page calls, an unknown one
refused in one line, and each command's ``writes_store`` what it does to a store.

Oracle for ``writes_store``: every command is run against a temporary persistent folder
(the tab's ``/scellis``: the run store and the kept data files) with the files of that
folder hashed before and after; a command writes the store when the hashes differ. The
generation runs on a run that keeps its data file, so reading a run's data is covered.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import inspect
import json
import re
import warnings
from pathlib import Path

import pytest

from generate.genutil import record_text, write_text
from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.store.records import Records
from scellis.webapp import api, commands, kept_data, session_files
from webapp.test_use_api import SERIES

ROOT = Path(__file__).resolve().parents[2]
CSV = (ROOT / "src/scellis/data/bundled/sunspots_yearly.csv").read_text()
KERNEL = "@compute @workgroup_size(1) fn main() {}"
# commands the worker answers itself before (or instead of) the engine's
WORKER_ONLY = {"import_files", "release_store", "take_store"}


def _shipped() -> list[str]:
    """The commands of the scellis package (a site's extra packages, such as the
    benchmark hooks, may register more when imported)."""
    return [n for n in api.commands() if commands.lookup(n).fn.__module__.startswith("scellis.")]


def _call(cmd: str, **args):
    out = api.dispatch(cmd, json.dumps(args))
    if hasattr(out, "__anext__"):

        async def drain():
            return [e async for e in out]

        return asyncio.run(drain())
    return asyncio.run(out) if inspect.iscoroutine(out) else out


def _hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` but a store's ``files/``: the working copies
    of a run's kept data files, made again from their objects whenever one is needed."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and rel.parts[1:2] != ("files",):
            out[str(rel)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _onnx_model(folder: Path) -> Path:
    torch = pytest.importorskip("torch")
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    folder.mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 4),), str(folder / "m.onnx"), dynamo=False,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}})  # fmt: skip
    return folder


def _the_run(store: Path) -> str:
    records = Records(store)
    try:
        return records.runs()[-1]["id"]
    finally:
        records.close()


def _script(tmp: Path, store: Path, ctx: dict) -> list[tuple[str, object]]:
    """Each command with arguments it succeeds with, in an order where each one's inputs
    exist (a trained run before its view, a bundle before its import); ``ctx`` holds the
    results of the commands already run."""
    s = str(store)
    lm = tmp / "lm"
    lm.mkdir()
    write_text(lm)
    (lm / "r.sml").write_text(record_text(context=8))
    lm_store = tmp / "persistent" / "lm"  # made before the script: generate's run
    argv = ["train", str(lm / "r.sml"), "--device", "reference", "--store", str(lm_store),
            "--max-steps", "2"]  # fmt: skip
    assert main(argv) == 0
    picked = _onnx_model(tmp / "picked")
    run = lambda: _the_run(store)  # noqa: E731 - made by the train step below
    return [
        ("event_schema", lambda: {}),
        ("control", lambda: {"message": {"pause": False}}),
        ("store_taken", lambda: {}),
        ("catalog", lambda: {"kind": "block"}),
        ("project", lambda: {"text": SERIES}),
        ("edit", lambda: {"text": SERIES, "edit": {"kind": "set_field", "block": None,
                                                   "field": "seed", "value": 7}}),
        ("labels", lambda: {"record": SERIES}),
        ("follow", lambda: {"before": SERIES, "text": SERIES.replace("window: 6", "window: 8")}),
        ("data_section", lambda: {"record": SERIES}),
        ("record_data", lambda: {"record": SERIES}),
        ("load_table", lambda: {"name": "s.csv", "text": CSV}),
        ("load_text", lambda: {"name": "t.txt", "text": "a story, a story"}),
        ("load_extension", lambda: {"name": "nothing_new.py", "text": "X = 1\n"}),
        ("parse_budget", lambda: {"text": "8 GiB"}),
        ("plan", lambda: {"record_text": SERIES, "device": "reference"}),
        ("check_kernel", lambda: {"code": KERNEL}),
        ("dataset_from", lambda: {"record": SERIES, "name": "s.csv", "text": CSV,
                                  "column": "sunspots", "datetime": "year"}),
        ("restore_data", lambda: {"folder": "restored"}),
        ("train", lambda: {"record_text": SERIES, "device": "reference", "store": s,
                           "max_steps": 2, "samples": False}),
        ("runs", lambda: {"store": s}),
        ("run_view", lambda: {"run": run(), "store": s}),
        ("run_record", lambda: {"run": run(), "store": s}),
        ("compare_runs", lambda: {"a": run(), "b": run(), "store": s}),
        ("use_info", lambda: {"run": run(), "store": s}),
        ("predict", lambda: {"run": run(), "store": s, "horizon": 2, "device": "reference"}),
        ("share_link", lambda: {"run": run(), "site": "http://127.0.0.1/", "store": s}),
        ("open_link", lambda: {"link": ctx["share_link"]}),
        ("link_match", lambda: {"link": ctx["share_link"], "losses": [[1, 0.5]]}),
        ("link_data", lambda: {"link": ctx["share_link"], "folder": "linked",
                               "data": base64.b64encode(CSV.encode()).decode()}),
        ("resume", lambda: {"run": run(), "store": s, "device": "reference", "max_steps": 3,
                            "samples": False}),
        ("export_run", lambda: {"run": run(), "store": s}),
        ("import_run", lambda: {"data": ctx["export_run"], "store": str(store) + "2"}),
        ("unsaved_files", lambda: {"root": str(store.parent)}),
        ("generate", lambda: {"run": _the_run(lm_store), "store": str(lm_store),
                              "prompt": "ab", "max_new": 2, "device": "reference"}),
        ("import_model", lambda: {"folder": str(picked), "store": s}),
        ("forward", lambda: {"record_text": ctx["import_model"]["record"], "store": s,
                             "device": "reference"}),
    ]  # fmt: skip


def test_the_registry_is_exactly_the_commands_the_page_calls():
    js = "\n".join(p.read_text() for p in (ROOT / "web/src").rglob("*.js"))
    js += (ROOT / "web/worker.js").read_text()
    called = set(re.findall(r"\b(?:call|stream|run|go|dispatch)\(\s*\"([a-z_]+)\"", js))
    called |= set(re.findall(r"\"(load_t\w+)\"", js))  # the data panel picks one of two
    called |= set(re.findall(r"=> \[\"([a-z_]+)\"", js))  # what the worker prepares a call to
    # the worker's control messages; a kernel author's check, from the console
    called |= {"control", "check_kernel"}
    assert called - WORKER_ONLY == set(_shipped())
    for name in _shipped():  # each is callable through dispatch: its arguments bound
        with pytest.raises(ScellisError, match=f"^{name}: "):
            api.dispatch(name, json.dumps({"no_such_argument": 1}))
    assert set(commands.read_only()) & set(_shipped()) < set(_shipped())


def test_an_unknown_command_is_one_clear_message():
    for name in ("bundled_files", "keep", "dispatch", "hello"):  # helpers are not commands
        with pytest.raises(ScellisError, match=f"unknown command '{name}'; known: .*train"):
            api.dispatch(name, "{}")
        assert api.last_error()["message"].startswith(f"unknown command '{name}'")

    def train():
        pass

    with pytest.raises(ValueError, match="two worker commands named 'train'"):
        commands.command(writes_store=True)(train)


def test_writes_store_is_what_each_command_does_to_a_store(tmp_path, monkeypatch):
    persistent = tmp_path / "persistent"
    store = persistent / "store"
    cwd = tmp_path / "cwd"  # the worker's working folder: not persistent
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    # the kept copies of pinned data go under the temporary persistent folder
    monkeypatch.setattr(kept_data.keep, "__defaults__", (str(persistent / "datasets"),))
    monkeypatch.setattr(kept_data.restore_data, "__defaults__", (str(persistent / "datasets"),
                                                                 "datasets"))  # fmt: skip
    # a limit every run's objects are over: the worker's question of what to leave out of
    # the write-back then notes them
    monkeypatch.setattr(session_files, "KEEP_LIMIT", 1024)
    ctx: dict = {}
    script = _script(tmp_path, store, ctx)
    assert sorted(name for name, _ in script) == _shipped()
    wrote = set()
    for name, args in script:
        before = _hashes(persistent)
        ctx[name] = _call(name, **args())
        if _hashes(persistent) != before:
            wrote.add(name)
    assert ctx["train"][-1]["kind"] == "end" and ctx["resume"][-1]["kind"] == "end"
    assert ctx["check_kernel"] == {"ok": True} and ctx["import_run"]
    assert wrote == set(_shipped()) - set(commands.read_only())
