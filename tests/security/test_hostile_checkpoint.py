"""Hostile train.py checkpoints and run bundles: each refused at import with one line,
exit 2, and nothing left in the store that names a run (``scellis runs`` shows none, and
a later ``runs gc`` or ``runs`` does not trip over a half-made one)."""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import tarfile

import pytest
from ckptutil import make_package, parts, rewrite, run_ids
from hostile import Sentinel, refuse

from scellis.cli.main import main


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt")
    return make_package(folder)


@pytest.fixture
def ckpt(package, tmp_path):
    """A fresh copy of the package (the checkpoint reads its data beside it)."""
    shutil.copytree(package.parents[1], tmp_path / "pkg")
    return tmp_path / "pkg" / "checkpoints" / package.name


def _import(capsys, path, store, match=None):
    line = refuse(capsys, ["import", path, "--store", store, "--device", "reference"], match)
    assert "Traceback" not in line
    assert run_ids(store) == []
    return line


def _set(state, path, value):
    state = copy.deepcopy(state)
    node = state
    for k in path[:-1]:
        node = node[k]
    if value is _DROP:
        node.pop(path[-1])
    else:
        node[path[-1]] = value
    return state


_DROP = object()

STATE_CASES = {
    "step as text": (("step",), "4"),
    "step 1e30": (("step",), 1e30),
    "step negative": (("step",), -1),
    "step huge int": (("step",), 2**70),
    "batch negative": (("batch",), -3),
    "epoch a list": (("epoch",), [1]),
    "seed true": (("seed",), True),
    "no optimizer": (("optimizer",), _DROP),
    "optimizer not an object": (("optimizer",), "adam"),
    "no optimizer options": (("optimizer", "options"), _DROP),
    "unknown optimizer option": (("optimizer", "options", "warp"), 9.0),
    "lr as text": (("optimizer", "options", "lr"), "fast"),
    "betas of one": (("optimizer", "options", "betas"), [0.9]),
    "amsgrad a number": (("optimizer", "options", "amsgrad"), 2),
    "step_count text": (("optimizer", "step_count"), "4"),
    "step_count past step": (("optimizer", "step_count"), 99),
    "a step of no parameter": (("optimizer", "steps", "ghost"), 1),
    "a parameter step past step_count": (("optimizer", "steps", "head.bias"), 50),
    "metric as text": (("metrics", "loss"), "low"),
    "metric a list": (("metrics", "val_loss"), [1.0]),
    "metrics a list": (("metrics",), [1, 2]),
    "loss scale zero": (("loss_scale", "scale"), 0),
    "loss scale text": (("loss_scale", "good"), "x"),
    "scheduler a list": (("scheduler",), [1]),
    "early stopping text": (("early_stopping", "best"), "x"),
    "dataset not a hash": (("dataset",), "../../etc"),
    "record a number": (("record",), 7),
    "no record": (("record",), _DROP),
    "unknown entry": (("shell",), "rm -rf /"),
}


@pytest.mark.parametrize("case", sorted(STATE_CASES))
def test_hostile_state_is_refused_at_import(ckpt, tmp_path, capsys, case):
    tensors, state = parts(ckpt)
    path, value = STATE_CASES[case]
    rewrite(ckpt, tensors, _set(state, path, value))
    _import(capsys, ckpt, tmp_path / "store")


@pytest.mark.parametrize("text", [
    '{"step": 4, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"step": NaN}', '{"step": ' + "9" * 5000 + "}", "[]", "not json", "",
])  # fmt: skip
def test_state_that_is_no_bounded_json_is_refused(ckpt, tmp_path, capsys, text):
    tensors, _ = parts(ckpt)
    rewrite(ckpt, tensors, state_text=text)
    _import(capsys, ckpt, tmp_path / "store")


def _tensor_case(tensors, case):
    t = dict(tensors)
    if case == "weight wrong shape":
        t["model.head.weight"] = ("F32", (3, 1), t["model.head.weight"][2])
    elif case == "weight wrong dtype":
        t["model.head.weight"] = ("F16", (1, 3), os.urandom(6))
    elif case == "weight missing":
        del t["model.head.bias"]
    elif case == "optimizer buffer missing for one parameter":
        del t["optim.head.bias.exp_avg"]
    elif case == "optimizer buffer wrong shape":
        t["optim.head.weight.exp_avg"] = ("F32", (3,), os.urandom(12))
    elif case == "optimizer buffer of no parameter":
        t["optim.ghost.exp_avg"] = ("F32", (1,), os.urandom(4))
    elif case == "a tensor outside model. and optim.":
        t["evil"] = ("F32", (1,), os.urandom(4))
    return t


@pytest.mark.parametrize("case", [
    "weight wrong shape", "weight wrong dtype", "weight missing",
    "optimizer buffer missing for one parameter", "optimizer buffer wrong shape",
    "optimizer buffer of no parameter", "a tensor outside model. and optim.",
])  # fmt: skip
def test_hostile_tensors_are_refused_at_import(ckpt, tmp_path, capsys, case):
    tensors, state = parts(ckpt)
    rewrite(ckpt, _tensor_case(tensors, case), state)
    _import(capsys, ckpt, tmp_path / "store")


def test_a_refused_import_leaves_a_store_later_commands_read(ckpt, tmp_path, capsys):
    store = tmp_path / "store"
    sentinel = Sentinel(tmp_path / "outside")
    good = ckpt.read_bytes()
    assert main(["import", str(ckpt), "--store", str(store), "--device", "reference"]) == 0
    (before,) = run_ids(store)
    tensors, state = parts(ckpt)
    rewrite(ckpt, tensors, _set(state, ("scheduler",), {"last_epoch": "x"}))
    line = _import_into(capsys, ckpt, store)
    assert not sentinel.secret_leaked(line)
    assert run_ids(store) == [before]
    for argv in (["runs"], ["runs", "show", before], ["runs", "gc", "--grace", "0"]):
        assert main([*argv, "--store", str(store)]) == 0
    sentinel.unchanged()
    ckpt.write_bytes(good)
    assert main(["import", str(ckpt), "--store", str(store), "--device", "reference"]) == 0
    assert len(run_ids(store)) == 2


def _import_into(capsys, ckpt, store):
    return refuse(capsys, ["import", ckpt, "--store", store, "--device", "reference"])


def test_a_valid_checkpoint_imports_and_resumes(ckpt, tmp_path, capsys):
    store = tmp_path / "store"
    assert main(["import", str(ckpt), "--store", str(store), "--device", "reference"]) == 0
    (rid,) = run_ids(store)
    capsys.readouterr()
    assert main(["resume", rid, "--store", str(store), "--device", "reference",
                 "--max-steps", "6"]) == 0  # fmt: skip


# -- run bundles ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundle(package, tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "run.tar"
    store = package.parents[2] / "trained"
    assert main(["runs", "export", "last", "--store", str(store), "-o", str(out)]) == 0
    return out


def _members(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _tar(members: dict) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _with_manifest(members, change):
    """The bundle with its checkpoint manifest changed and renamed by its new hash, and
    the checkpoint row pointing at it."""
    import hashlib  # noqa: PLC0415

    rows = json.loads(members["run.json"])
    out = dict(members)
    for c in rows["checkpoints"]:
        old = c["manifest"]
        m = json.loads(out.pop(f"objects/{old}"))
        data = change(m)
        h = hashlib.sha256(data).hexdigest()
        out[f"objects/{h}"] = data
        c["manifest"] = h
    out["run.json"] = json.dumps(rows).encode()
    return out


ESC = "\x1b]0;pwned\x07\x1b[2J"


def _with_rows(members, change):
    """The bundle with its run.json rows changed in place by ``change``."""
    rows = json.loads(members["run.json"])
    change(rows)
    return {**members, "run.json": json.dumps(rows).encode()}


BUNDLE_CASES = {
    "deep run.json": lambda m: {**m, "run.json": b"[" * 100_000 + b"]" * 100_000},
    "5000-digit number": lambda m: {**m, "run.json": m["run.json"].replace(
        b'"step": ', b'"step": ' + b"9" * 5000 + b"0", 1)},
    "manifest step text": lambda m: _with_manifest(m, lambda d: json.dumps(
        {**d, "step": "4"}).encode()),
    "manifest deep": lambda m: _with_manifest(m, lambda d: json.dumps(
        {**d, "early_stopping": "[" * 50_000}).encode()[:-1] + b"]" * 50_000 + b'"}'),
    "manifest seed text": lambda m: _with_manifest(m, lambda d: json.dumps(
        {**d, "seed": "x"}).encode()),
    "manifest metrics text": lambda m: _with_manifest(m, lambda d: json.dumps(
        {**d, "metrics": {"loss": "low"}}).encode()),
    "manifest optimizer not an object": lambda m: _with_manifest(m, lambda d: json.dumps(
        {**d, "optimizer": [1]}).encode()),
    "manifest rng text": lambda m: _with_manifest(m, lambda d: json.dumps(
        {**d, "rng_state": "x"}).encode()),
    # text the listings print as it is: a terminal escape (retitle, clear the screen)
    "escape in a metric name": lambda m: _with_rows(m, lambda r: r["metrics"][0].update(
        name="loss" + ESC)),
    "escape in the device": lambda m: _with_rows(m, lambda r: r["run"].update(
        device="reference" + ESC)),
    "escape in argv": lambda m: _with_rows(m, lambda r: r["run"].update(
        argv=json.dumps(["scellis", "train", ESC]))),
    "escape in the config": lambda m: _with_rows(m, lambda r: r["run"].update(
        config=json.dumps({**json.loads(r["run"]["config"]), "note" + ESC: 1}))),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BUNDLE_CASES))
def test_hostile_bundles_are_refused_at_import(bundle, tmp_path, capsys, case):
    path = tmp_path / "b.tar"
    path.write_bytes(_tar(BUNDLE_CASES[case](_members(bundle))))
    store = tmp_path / "store"
    refuse(capsys, ["runs", "import", path, "--store", store])
    assert run_ids(store) == []


def test_the_bundle_itself_imports(bundle, tmp_path):
    store = tmp_path / "store"
    assert main(["runs", "import", str(bundle), "--store", str(store)]) == 0
    assert len(run_ids(store)) == 1


def test_a_data_source_outside_the_given_folder_is_never_read(ckpt, tmp_path, capsys):
    sentinel = Sentinel(tmp_path / "outside")
    tensors, state = parts(ckpt)
    for source in (str(sentinel.root / "secret.txt"), "../outside/secret.txt"):
        record = state["record"].replace("source: series.csv", f"source: {source}")
        rewrite(ckpt, tensors, {**state, "record": record})
        store = tmp_path / "store"
        line = refuse(capsys, ["import", ckpt, "--store", store, "--device", "reference",
                               "--base-dir", ckpt.parents[1]])  # fmt: skip
        assert not sentinel.secret_leaked(line) and run_ids(store) == []
    sentinel.unchanged()


def test_a_fifo_named_as_a_checkpoint_does_not_block(tmp_path, capsys):
    fifo = tmp_path / "ckpt.safetensors"
    os.mkfifo(fifo)
    refuse(capsys, ["import", fifo, "--store", tmp_path / "store"])
