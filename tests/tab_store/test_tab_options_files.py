"""A tab run keeps what it needs to be resumed anywhere (reference device, no browser):
the options it was started with (drop_last, validate) and the CSV the data panel loaded.
A run stopped at step 3 resumes, with the CSV gone from the worker's folder, to the
losses of an uninterrupted run; so does its bundle in the native CLI; any listed
checkpoint, not only the last, is a starting point."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import random
import tarfile
from pathlib import Path

import pytest

from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.sml import parse
from scellis.store.gc import collect
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from scellis.webapp import api, dataset_api, run_api

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lstm_forecaster.sml"
# 120 rows: 76 training windows, so batches of 32 leave a short third one that
# drop_last drops (2 steps an epoch instead of 3): a resume that forgot it shows
OPTS = dict(device="reference", max_steps=8, log_every=1, samples=False, validate=False,
            drop_last=True, checkpoint_every=2)  # fmt: skip


def _csv(seed: int = 3, n: int = 120) -> str:
    rng = random.Random(seed)
    return "year,v\n" + "".join(f"{1800 + i},{rng.uniform(5, 100):.2f}\n" for i in range(n))


def _events(cmd: str, stop_at: int | None = None, **args) -> list[dict]:
    async def go():
        out = []
        async for e in api.dispatch(cmd, json.dumps(args)):
            out.append(e)
            if stop_at is not None and e["kind"] == "log" and e["step"] == stop_at:
                run_api.control({"stop": True})  # Stop, as the page's button sends it
        return out

    return asyncio.run(go())


def _losses(evs) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in evs if e["kind"] == "log"}


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys(), (a, b)
    for k in a:
        assert abs(a[k] - b[k]) <= 1e-9 * max(1.0, abs(b[k])), (k, a[k], b[k])


@pytest.fixture
def csv_record(tmp_path, monkeypatch):
    """The example record pointed at a CSV by the data panel's own entry point, from a
    folder standing in for the worker's (the file is saved under ./datasets)."""
    work = tmp_path / "worker"
    work.mkdir()
    monkeypatch.chdir(work)
    out = dataset_api.dataset_from(EXAMPLE.read_text(), "flow.csv", _csv(), column="v")
    assert parse(out["record"]).data["data"]["source"] == "datasets/flow.csv"
    return out["record"]


def test_resume_keeps_options_and_data_and_bundle_resumes_natively(csv_record, tmp_path, capsys):
    whole = _events("train", record_text=csv_record, store=str(tmp_path / "w"), **OPTS)
    assert sorted(_losses(whole)) == list(range(1, 9))
    assert not [e for e in whole if e["kind"] == "eval"]

    store = tmp_path / "st"
    first = _events("train", stop_at=3, record_text=csv_record, store=str(store), **OPTS)
    assert [e["step"] for e in first if e["kind"] == "checkpoint"] == [2, 3]
    (run,) = run_api.runs(str(store))
    rid = run["id"]
    assert run["status"] == "interrupted" and run["checkpoints"] == [2, 3]
    bundle = base64.b64decode(run_api.export_run(rid, str(store)))

    # a fresh worker: the data panel's file is gone, the store still has it
    Path("datasets/flow.csv").unlink()
    collect(ObjectStore(store), Records(store), grace_s=0.0)  # the file is not garbage
    resumed = _events("resume", run=rid, store=str(store), device="reference")
    assert resumed[0] == {"kind": "resume", "run": rid, "step": 3, "skipped": []}
    # the curves so far come back with it (for a page that did not draw them)
    assert resumed[1]["kind"] == "history"
    assert {s: v for s, v in resumed[1]["metrics"]["loss"]} == _losses(first)
    assert [s for s, _ in resumed[1]["metrics"]["lr"]] == [1, 2, 3]
    assert not [e for e in resumed if e["kind"] == "eval"]  # validate=False was kept
    _close({**_losses(first), **_losses(resumed)}, _losses(whole))

    # the bundle of the stopped run carries the CSV: the native CLI imports and resumes it
    f = tmp_path / "run.tar"
    f.write_bytes(bundle)
    native = tmp_path / "native"
    capsys.readouterr()
    assert main(["runs", "import", str(f), "--store", str(native), "--json"]) == 0
    assert main(["resume", rid, "--store", str(native), "--device", "reference", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    natively = {x["step"]: x["loss"] for x in lines if x.get("kind") == "log"}
    assert not [x for x in lines if x.get("kind") == "eval"]
    _close({**_losses(first), **natively}, _losses(whole))
    assert (native / "files" / rid / "datasets" / "flow.csv").read_text() == _csv()


def test_any_listed_checkpoint_resumes(csv_record, tmp_path):
    store = tmp_path / "st"
    whole = _events("train", record_text=csv_record, store=str(store), **OPTS)
    (run,) = run_api.runs(str(store))
    assert run["status"] == "done" and run["checkpoints"] == [4, 6, 8]  # keep_last 3
    with pytest.raises(ScellisError, match="no checkpoint at step 5"):
        _events("resume", run=run["id"], store=str(store), device="reference", step=5)
    again = _events("resume", run=run["id"], store=str(store), device="reference", step=4)
    assert again[0]["step"] == 4 and again[0]["parent"] == f"{run['id']}@4"
    _close(_losses(again), {k: v for k, v in _losses(whole).items() if k > 4})
    # an older checkpoint than the last: a new run branches off, the first one stays
    branch, first = run_api.runs(str(store))
    assert branch["id"] == again[0]["run"] != run["id"] and branch["parent"] == again[0]["parent"]
    assert branch["status"] == "done" and branch["step"] == 8
    assert first == run


def test_a_resume_to_more_steps_makes_them_the_runs_own(csv_record, tmp_path):
    """A finished run resumed to a larger max steps and cut off on the way is listed with
    that max steps, and a plain resume (after a reload: nothing passed) goes on to it."""
    store = tmp_path / "st"
    opts = {**OPTS, "max_steps": 4}
    _events("train", record_text=csv_record, store=str(store), **opts)
    (run,) = run_api.runs(str(store))
    assert run["status"] == "done" and run["max_steps"] == 4
    more = random.Random(7).randint(7, 9)
    cut = _events("resume", stop_at=5, run=run["id"], store=str(store), device="reference",
                  max_steps=more)  # fmt: skip
    assert max(_losses(cut)) == 5
    (row,) = run_api.runs(str(store))
    assert (row["step"], row["max_steps"], row["record"]) == (5, more, run["record"])
    _events("resume", run=run["id"], store=str(store), device="reference")
    (row,) = run_api.runs(str(store))
    assert (row["status"], row["step"], row["max_steps"]) == ("done", more, more)


def _with_files(bundle: bytes, files) -> bytes:
    """``bundle`` with its run's config naming ``files`` (the rest unchanged)."""
    src = tarfile.open(fileobj=io.BytesIO(bundle), mode="r:")
    out = io.BytesIO()
    with src, tarfile.open(fileobj=out, mode="w") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read()
            if m.name == "run.json":
                rows = json.loads(data)
                config = json.loads(rows["run"]["config"])
                config["files"] = files
                rows["run"]["config"] = json.dumps(config)
                data = json.dumps(rows).encode()
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_a_bundle_naming_files_badly_is_refused(csv_record, tmp_path):
    store = tmp_path / "st"
    _events("train", stop_at=2, record_text=csv_record, store=str(store), **OPTS)
    (run,) = run_api.runs(str(store))
    bundle = base64.b64decode(run_api.export_run(run["id"], str(store)))
    records = Records(store)
    try:
        h = json.loads(records.rows_of(run["id"])["run"]["config"])["files"]
    finally:
        records.close()
    assert list(h) == ["datasets/flow.csv"]
    for files, why in (({"": h["datasets/flow.csv"]}, "names no file"),
                       ({"datasets/flow.csv": "ab" * 32}, "missing|lacks"),
                       (["datasets/flow.csv"], "not a {source: sha256} map")):  # fmt: skip
        b64 = base64.b64encode(_with_files(bundle, files)).decode()
        with pytest.raises(ScellisError, match=why):
            run_api.import_run(b64, str(tmp_path / "other"))


@pytest.mark.webgpu
def test_replay_is_kept_by_a_resume(csv_record, tmp_path):
    """``replay`` is one of the options a run keeps: a run started with it off resumes
    eager, a default run resumes replayed (the end event gives its replay summary), and
    both give the losses of the uninterrupted run, bitwise (replay is eager's maths)."""
    gpu = {**OPTS, "device": "webgpu"}
    whole = _events("train", record_text=csv_record, store=str(tmp_path / "w"), **gpu)
    ends = {}
    for replay in (True, False):
        store = tmp_path / f"replay-{replay}"
        first = _events("train", stop_at=3, record_text=csv_record, store=str(store),
                        **gpu, replay=replay)  # fmt: skip
        (run,) = run_api.runs(str(store))
        resumed = _events("resume", run=run["id"], store=str(store), device="webgpu")
        ends[replay] = resumed[-1]
        assert {**_losses(first), **_losses(resumed)} == _losses(whole)
    assert ends[True]["kind"] == "end" and ends[True]["replay"]["replayed_steps"] == 2
    assert ends[False]["kind"] == "end" and ends[False].get("replay") is None
