"""Exact resume: straight vs killed-and-resumed runs are bitwise identical on debug.

Every run is a real ``scellis`` process (tests/resume/harness.py) on a real store. A
straight run trains N steps; another run of the same record is SIGKILLed at a random
step inside an epoch (after a checkpoint, before the next), or dies at a named point
of a checkpoint write, and ``scellis resume RUN`` takes it to N. Then the final
checkpoints name the same weights and optimizer objects (same sha256: identical
bytes), the RNG counters, step, epoch and batch agree, and the per-step loss and
validation curves are identical, float for float.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import scellis
from scellis.cli.main import main
from scellis.store.manifest import read_manifest
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from storeutil import STEPS_PER_EPOCH, write_record

SRC = str(Path(scellis.__file__).resolve().parent.parent)
HARNESS = str(Path(__file__).resolve().parent / "harness.py")


@pytest.fixture
def record(tmp_path):
    return write_record(tmp_path)


def _harness(spec, **kw):
    env = {
        **os.environ,
        "PYTHONPATH": SRC,
        "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"),
    }
    return subprocess.Popen(
        [sys.executable, HARNESS, json.dumps(spec)], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw,
    )  # fmt: skip


def _ok(spec):
    p = _harness(spec)
    out, err = p.communicate(timeout=600)
    return p.returncode, out, err


def _train_argv(record, store, device, steps, every):
    return [str(record), "--store", str(store), "--device", device, "--max-steps", str(steps),
            "--checkpoint-every", str(every), "--keep-last", "50", "--json"]  # fmt: skip


def _only_run(store):
    rec = Records(store)
    try:
        (run,) = rec.runs()
        return run["id"]
    finally:
        rec.close()


def _final(store, rid):
    rec = Records(store)
    try:
        ck = rec.checkpoints(rid)[-1]
        curves = {k: rec.metrics(rid, k) for k in ("loss", "lr", "val_loss")}
        status = rec.run(rid)["status"]
    finally:
        rec.close()
    return read_manifest(ObjectStore(store), ck["manifest"]), curves, status


def _assert_same(a_store, b_store, steps):
    ma, ca, sa = _final(a_store, _only_run(a_store))
    mb, cb, sb = _final(b_store, _only_run(b_store))
    assert sa == sb == "done"
    assert ma["step"] == mb["step"] == steps
    assert (ma["epoch"], ma["batch"]) == (mb["epoch"], mb["batch"])
    assert ma["weights"] == mb["weights"]  # identical safetensors bytes
    assert ma["optimizer_state"] == mb["optimizer_state"]  # moments, step counts
    assert ma["optimizer"] == mb["optimizer"] and ma["scheduler"] == mb["scheduler"]
    assert ma["rng_state"] == mb["rng_state"]
    assert ma["early_stopping"] == mb["early_stopping"] and ma["metrics"] == mb["metrics"]
    assert [s for s, _ in ca["loss"]] == list(range(1, steps + 1))
    assert ca == cb  # every step's loss and lr, every evaluation, float for float
    for name in ("dropout", "shuffle"):
        assert ma["rng_state"][name]["algorithm"] == "philox4x32"


def _kill_and_resume(record, store, device, steps, every, pause_after):
    p = _harness({"cmd": "train", "argv": _train_argv(record, store, device, steps, every),
                  "pause_after": pause_after})  # fmt: skip
    for line in p.stdout:
        if line.strip() == "PAUSED":
            break
    else:
        raise AssertionError(f"the run never reached step {pause_after}: {p.stderr.read()}")
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    assert p.returncode == -signal.SIGKILL
    rid = _only_run(store)
    rec = Records(store)
    try:
        run = rec.run(rid)
        assert run["status"] == "interrupted" and run["step"] == pause_after
        last = rec.checkpoints(rid)[-1]["step"]
    finally:
        rec.close()
    assert last == (pause_after // every) * every
    code, out, err = _ok({"cmd": "resume", "argv": [rid, "--store", str(store), "--json"]})
    assert code == 0, err
    events = [json.loads(x) for x in out.splitlines()]
    assert events[0]["step"] == last
    assert not any(e.get("bitwise") is False for e in events)  # same device: no warning
    return events


def test_ctrl_c_checkpoints_exits_130_and_resumes_bitwise(straight, record, tmp_path):
    store = tmp_path / "b"
    p = _harness({"cmd": "train", "argv": _train_argv(record, store, "reference", STEPS, EVERY),
                  "pause_after": 6})  # fmt: skip
    before = []
    for line in p.stdout:
        if line.strip() == "PAUSED":
            break
        before.append(line)
    p.send_signal(signal.SIGINT)  # arrives mid-step-boundary work: only a flag is set
    out, err = p.communicate("go\n", timeout=120)
    assert p.returncode == 130, err
    rid = _only_run(store)
    events = [json.loads(x) for x in before + out.splitlines()]
    ck = [e for e in events if e["kind"] == "checkpoint"]
    assert [(e["step"], e["reason"]) for e in ck] == [(4, "every"), (6, "interrupt")]
    assert max(e["step"] for e in events if e["kind"] == "log") == 6  # stopped at once
    assert events[-1] == {"kind": "resume_hint", "command": f"scellis resume {rid} --store {store}"}
    assert _visible_checkpoints(store, rid) == ("interrupted", [4, 6])
    code, out, err = _ok({"cmd": "resume", "argv": [rid, "--store", str(store), "--json"]})
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["step"] == 6
    _assert_same(straight, store, STEPS)


def _straight(record, store, device, steps, every):
    """The uninterrupted run, in this process (only interrupted runs need their own)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["train", *_train_argv(record, store, device, steps, every)])
    assert code == 0, out.getvalue()
    return [json.loads(x) for x in out.getvalue().splitlines()]


STEPS, EVERY = 2 * STEPS_PER_EPOCH, 4  # checkpoint 8 is batch 1 of epoch 1


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """One uninterrupted reference run of STEPS steps: the oracle of every test here."""
    root = tmp_path_factory.mktemp("straight")
    rec = write_record(root)
    events = _straight(rec, root / "store", "reference", STEPS, EVERY)
    assert events[-1]["kind"] == "end" and events[-1]["steps"] == STEPS
    return root / "store"


def test_kill_inside_an_epoch_and_resume_is_bitwise_identical_on_reference(
    straight, record, tmp_path
):
    # SIGKILL between checkpoints 8 and 12, at a random step (batch 2..4 of epoch 1)
    pause = random.Random().randint(9, 11)
    _kill_and_resume(record, tmp_path / "b", "reference", STEPS, EVERY, pause)
    _assert_same(straight, tmp_path / "b", STEPS)


@pytest.mark.webgpu
def test_kill_and_resume_is_bitwise_identical_on_webgpu(record, tmp_path):
    steps, every = 6, 4  # checkpoint 4 is mid-epoch 0; killed after step 5
    _straight(record, tmp_path / "a", "webgpu", steps, every)
    _kill_and_resume(record, tmp_path / "b", "webgpu", steps, every, 5)
    _assert_same(tmp_path / "a", tmp_path / "b", steps)


def _visible_checkpoints(store, rid):
    rec = Records(store)
    try:
        return rec.run(rid)["status"], [c["step"] for c in rec.checkpoints(rid)]
    finally:
        rec.close()


def test_faults_during_checkpoint_writes_and_a_full_disk_are_survived(straight, record, tmp_path):
    """One run meets every fault at its checkpoint of step 8, one after the other: death
    after the weights object, halfway through the next object, a full disk, death
    before the manifest, death before the records row. Each time the checkpoint of
    step 4 stays the latest, no partial object is visible, and the final resume ends
    bitwise equal to the straight run. (The order matters: a retry re-creates the same
    bytes, so objects an earlier attempt completed are found stored, not rewritten.)"""
    store = tmp_path / "b"
    opts = dict(max_steps=STEPS, log_every=1, checkpoint_every=EVERY, keep_last=50)
    kw = dict(ref=str(record), device="reference", store=str(store), options=opts,
              print_every=20, json_=True)  # fmt: skip
    code, _, err = _ok({"cmd": "train", "kw": kw, "die": {"point": "after_weights", "step": 8}})
    assert code == 9, err
    rid = _only_run(store)
    objs = ObjectStore(store)
    rkw = dict(ref=rid, store=str(store), to_step=None, device=None, json_=False, print_every=20)
    for fault in ("mid_object", "enospc", "before_manifest", "before_record", None):
        for h, _ in objs.list():
            objs.get(h)  # every visible object is whole (its hash verifies)
        if fault is None:
            break
        if fault == "enospc":
            # a full disk: one clear line, exit 2, the resume command, nothing partial
            code, out, err = _ok({"cmd": "resume", "kw": rkw, "enospc_at": 8})
            assert code == 2, err
            assert "is full" in err and "Traceback" not in err
            assert f"scellis resume {rid} --store {store}" in err
            assert _visible_checkpoints(store, rid) == ("failed", [4])
        else:
            spec = {"cmd": "resume", "kw": rkw, "die": {"point": fault, "step": 8}}
            code, out, err = _ok(spec)
            assert code == 9, err
            assert _visible_checkpoints(store, rid) == ("interrupted", [4])
        assert "from step 4" in out
        assert len(objs.temp_files()) == 1  # the half object, only under its temp name
    code, out, err = _ok({"cmd": "resume", "argv": [rid, "--store", str(store)]})
    assert code == 0, err
    assert "from step 4" in out
    _assert_same(straight, store, STEPS)


def test_skipped_overflow_steps_resume_bitwise(tmp_path, capsys):
    """Mixed f16 with a too-high initial loss scale: steps 1-4 and 9 overflow and are
    skipped (the host-side optimizer step counts still advance, as the loop does), the
    scale backs off on the device. A death while writing checkpoint 8 and a resume
    reproduce the straight run bitwise, loss-scale state and skip count included."""
    rec = write_record(tmp_path)
    text = rec.read_text().replace(
        "determinism_tier: debug",
        "determinism_tier: debug\nprecision: { policy: mixed_f16, init_scale: 1048576 }",
    )
    rec.write_text(text)
    steps, a, b = 12, tmp_path / "a", tmp_path / "b"
    events = _straight(rec, a, "reference", steps, 4)
    logs = {e["step"]: e for e in events if e["kind"] == "log"}
    assert [s for s, e in logs.items() if e["skipped"]] == [1, 2, 3, 4, 9]
    assert logs[12]["loss_scale"] == 32768.0
    opts = dict(max_steps=steps, log_every=1, checkpoint_every=4, keep_last=50)
    kw = dict(ref=str(rec), device="reference", store=str(b), options=opts, print_every=20,
              json_=True)  # fmt: skip
    code, _, err = _ok({"cmd": "train", "kw": kw, "die": {"point": "before_manifest", "step": 12}})
    assert code == 9, err
    rid = _only_run(b)
    code, out, err = _ok({"cmd": "resume", "argv": [rid, "--store", str(b), "--json"]})
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["step"] == 8
    resumed = {e["step"]: e for e in map(json.loads, out.splitlines()) if e["kind"] == "log"}
    for s in (9, 10, 11, 12):
        assert resumed[s]["skipped_total"] == logs[s]["skipped_total"]
        assert resumed[s]["loss_scale"] == logs[s]["loss_scale"]
    _assert_same(a, b, steps)
    ma = _final(a, _only_run(a))[0]
    opt = ma["optimizer"]["param_groups"][0]
    assert opt["steps"] == [steps] * len(opt["steps"])  # skipped steps counted, as the loop does


def test_a_really_full_disk_fails_cleanly_and_the_run_resumes(straight, record, tmp_path):
    """The store on a tiny tmpfs, filled up while the run trains: whichever write meets
    the full disk first (an object or the SQLite WAL), the run stops with one clear
    line; after space is freed, ``scellis resume`` finishes it bitwise equal."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                       capture_output=True)  # fmt: skip
    if r.returncode != 0:
        pytest.skip("mounting a tmpfs needs root; the injected-ENOSPC test covers this path")
    try:
        store = mnt / "store"
        filler = mnt / "filler"
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        filler.write_bytes(b"\0" * (free - 320 * 1024))  # room for the schema and a few steps
        code, out, err = _ok({"cmd": "train", "argv": _train_argv(record, store, "reference",
                                                                   STEPS, EVERY)})  # fmt: skip
        assert code == 2, out + err
        assert "Traceback" not in err
        events = [json.loads(x) for x in out.splitlines()]
        (error,) = [e for e in events if e["kind"] == "error"]
        assert "is full" in error["message"] and "free space and resume" in error["message"]
        rid = _only_run(store)
        assert events[-1] == {
            "kind": "resume_hint",
            "command": f"scellis resume {rid} --store {store}",
        }
        assert _visible_checkpoints(store, rid)[1][:1] == [4]  # something to resume from
        objs = ObjectStore(store)
        for h, _ in objs.list():
            objs.get(h)
        filler.unlink()
        code, out, err = _ok({"cmd": "resume", "argv": [rid, "--store", str(store), "--json"]})
        assert code == 0, err
        _assert_same(straight, store, STEPS)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)
