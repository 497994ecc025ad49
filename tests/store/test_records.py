"""SQLite records: schema, WAL, consistent concurrent reads, reconciliation, retention, GC."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import scellis
from scellis.base.errors import ScellisError
from scellis.store.gc import collect, retain
from scellis.store.manifest import read_manifest, write_manifest
from scellis.store.objects import ObjectStore
from scellis.store.records import Records

SRC = str(Path(scellis.__file__).resolve().parent.parent)


def _run(rec: Records, **kw) -> str:
    args = dict(
        record_hash="0" * 64, model_id="t/m@1", dataset_hash="d" * 64, device="reference",
        adapter="numpy", tier="debug", seed=3, argv=["train", "x.sml"], config={"a": 1},
    )  # fmt: skip
    args.update(kw)
    return rec.new_run(**args)


def test_schema_wal_and_version(tmp_path):
    rec = Records(tmp_path)
    assert rec.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert rec.db.execute("PRAGMA user_version").fetchone()[0] == 1
    rid = _run(rec)
    rec.log(rid, 1, 0, {"loss": 0.5, "lr": 1e-3})
    assert rec.metrics(rid) == [(1, 0.5)]
    assert rec.run(rid)["config"] == {"a": 1} and rec.resolve(rid[:17]) == rid
    with pytest.raises(ScellisError, match="no run"):
        rec.resolve("nope")
    rec.close()
    db = sqlite3.connect(tmp_path / "records.sqlite")
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()
    with pytest.raises(ScellisError, match="schema version 99"):
        Records(tmp_path)


WRITER = """
import sys
from scellis.store.records import Records
rec = Records(sys.argv[1])
rid = rec.new_run(record_hash="0"*64, model_id=None, dataset_hash=None, device="reference",
                  adapter="", tier="debug", seed=0, argv=[], config={})
print(rid, flush=True)
sys.stdin.readline()
for step in range(1, 1001):
    rec.log(rid, step, 0, {"loss": 1.0 / step, "lr": 0.1})
    if step % 50 == 0:
        rec.add_checkpoint(rid, step, 0, step, "f" * 64, 1.0 / step)
rec.finish(rid, "done")
"""


def test_a_reader_in_another_process_sees_consistent_rows(tmp_path):
    rec = Records(tmp_path)
    w = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": SRC},
    )  # fmt: skip
    rid = w.stdout.readline().strip()
    w.stdin.write("go\n")
    w.stdin.flush()
    seen = set()
    while True:
        with rec.snapshot():
            run = rec.db.execute("SELECT step, status FROM runs WHERE id=?", (rid,)).fetchone()
            n, top = rec.db.execute(
                "SELECT COUNT(*), MAX(step) FROM metrics WHERE run_id=? AND name='loss'", (rid,)
            ).fetchone()
            ck = rec.db.execute(
                "SELECT MAX(step) FROM checkpoints WHERE run_id=?", (rid,)
            ).fetchone()[0]
        # the run's step, its metrics and its checkpoints always agree
        assert n == run["step"] == (top or 0)
        # a checkpoint is never ahead of the metrics (it lands just after its step's row)
        assert (ck or 0) in (50 * (run["step"] // 50), 50 * ((run["step"] - 1) // 50))
        seen.add(run["step"])
        if run["status"] == "done":
            break
    assert w.wait(timeout=60) == 0
    assert len(seen) > 2  # the reader really overlapped the writer


def test_dead_process_or_stale_heartbeat_reads_interrupted(tmp_path):
    rec = Records(tmp_path, stale_s=3600)
    live = _run(rec)
    assert rec.run(live)["status"] == "running"  # this process is alive
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = _run(rec)
    rec.db.execute("UPDATE runs SET pid=? WHERE id=?", (child.pid, dead))
    assert rec.run(dead)["status"] == "interrupted"
    # a run on another host: only its heartbeat tells
    rec.db.execute("UPDATE runs SET host='elsewhere' WHERE id=?", (live,))
    assert rec.run(live)["status"] == "running"
    stale = Records(tmp_path, stale_s=0.0)
    time.sleep(0.01)
    assert stale.run(live)["status"] == "interrupted"
    rec.finish(live, "done")
    assert stale.run(live)["status"] == "done"


def _manifest(objs, rec_hash, step):
    w = objs.put(os.urandom(64))
    o = objs.put(os.urandom(64))
    return write_manifest(
        objs,
        dict(weights=w, optimizer_state=o, rng_state={}, epoch=0, step=step, batch=step,
             metrics={}, record=rec_hash, dataset=None, tier="debug"),
    )  # fmt: skip


def test_retention_keeps_last_k_and_best_and_gc_is_safe(tmp_path):
    objs, rec = ObjectStore(tmp_path), Records(tmp_path)
    rh = objs.put(b"model: t/m@1\n")
    rid = _run(rec, record_hash=rh)
    losses = {1: 0.9, 2: 0.1, 3: 0.5, 4: 0.6, 5: 0.7, 6: 0.8}
    manifests = {}
    for s, loss in losses.items():
        manifests[s] = _manifest(objs, rh, s)
        rec.add_checkpoint(rid, s, 0, s, manifests[s], loss)
    assert retain(rec, rid, keep_last=2) == [1, 3, 4]
    assert [c["step"] for c in rec.checkpoints(rid)] == [2, 5, 6]
    before = {h for h, _ in objs.list()}
    dropped = {h for s in (1, 3, 4) for h in _objects_of(objs, manifests[s])}
    kept = {h for s in (2, 5, 6) for h in _objects_of(objs, manifests[s])} | {rh}
    # everything is fresh: within the grace period nothing goes
    assert collect(objs, rec, grace_s=3600)["deleted"] == []
    # age every object, then a concurrent writer stores one that no row names yet
    for h, _ in objs.list():
        t = time.time() - 100
        os.utime(objs.path(h), (t, t))
    pending = objs.put(os.urandom(64))
    out = collect(objs, rec, grace_s=10.0)
    assert out["kept_recent"] == 1
    assert set(out["deleted"]) == dropped
    assert {h for h, _ in objs.list()} == (before - dropped) | {pending}
    for h in kept:
        objs.get(h)  # still present and intact
    for s in (2, 5, 6):
        assert read_manifest(objs, manifests[s])["step"] == s


def _objects_of(objs, m):
    man = read_manifest(objs, m)
    return {m, man["weights"], man["optimizer_state"]}


def test_the_heartbeat_thread_beats_while_the_main_thread_is_busy(tmp_path):
    from scellis.cli.runner import Heartbeat

    rec = Records(tmp_path)
    rid = _run(rec)
    rec.db.execute("UPDATE runs SET heartbeat=0 WHERE id=?", (rid,))
    with Heartbeat(tmp_path, rid, every=0.05):
        deadline = time.time() + 10
        while rec.run(rid)["heartbeat"] == 0 and time.time() < deadline:
            time.sleep(0.02)  # a long "step": the main thread writes nothing
    assert rec.run(rid)["heartbeat"] > time.time() - 10
