"""No code runs from what a user is sent, and a carried record reads no file outside.

A record that arrives inside a train.py checkpoint, a stored run (as a run bundle
brings one), an import or the tab names code to load: every command that reads it
refuses with one line naming ``--extensions``, and the module's marker file is never
written. The same record named by the user as a file to run still loads its code, and
``--extensions`` is the way to trust a stored one. A carried record's ``data.source``
that points out of its folder is never read.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile import SECRET, Sentinel, evil_extension, refuse

from scellis.catalog import extensions
from scellis.cli.main import main
from scellis.store.objects import ObjectStore
from scellis.store.safetensors import dumps, loads
from storeutil import write_record

TRAIN = ["--device", "reference", "--json", "--max-steps", "3", "--checkpoint-every", "3"]


@pytest.fixture(autouse=True)
def nothing_chosen(monkeypatch):
    """As in a fresh process: the user has named no extensions yet."""
    monkeypatch.setattr(extensions, "_USER_NAMED", set())


def _with_extensions(text: str, items: list[str]) -> str:
    listed = ", ".join(json.dumps(i) for i in items)
    return text.replace("blocks:\n", f"extensions: [{listed}]\nblocks:\n", 1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(folder, store, run id) of a short run of the tiny record."""
    d = tmp_path_factory.mktemp("trained")
    rec, store = write_record(d), d / "store"
    assert main(["train", str(rec), "--store", str(store), *TRAIN]) == 0
    con = sqlite3.connect(store / "records.sqlite")
    (rid,) = con.execute("SELECT id FROM runs").fetchone()
    con.close()
    return d, store, rid


# each way a record can name code: a file beside it, the package's own train.py, an
# absolute path, a folder, and a module that is installed (importing `this` prints)
def _items(folder: Path) -> list[list[str]]:
    evil_extension(folder / "ext")
    return [["evil.py"], ["train.py"], [str(folder / "ext" / "evil.py")], [str(folder / "ext")],
            ["this"], ["json", "evil.py"]]  # fmt: skip


def _check_no_code(capsys_out: str, marker: Path) -> None:
    assert not marker.exists(), "an extension named by a carried record ran"
    assert "Beautiful is better" not in capsys_out


@pytest.fixture(scope="module")
def checkpoint(trained, tmp_path_factory):
    """A train.py checkpoint exported from the trained run: (its path, tensors, meta)."""
    _, store, rid = trained
    pkg = tmp_path_factory.mktemp("pkg") / "pkg"
    argv = ["export", f"{rid}@3", "--to", "torch-train", str(pkg), "--store", str(store)]
    assert main(argv) == 0
    (ck,) = sorted((pkg / "checkpoints").glob("*.safetensors"))
    tensors, meta = loads(ck.read_bytes())
    tensors = {k: (code, shape, bytes(v)) for k, (code, shape, v) in tensors.items()}
    return ck, tensors, dict(meta)


def _hostile_checkpoint(checkpoint, edit) -> Path:
    ck, tensors, meta = checkpoint
    state = json.loads(meta["state"])
    edit(state)
    out = ck.with_name("step-hostile.safetensors")
    out.write_bytes(dumps(tensors, {**meta, "state": json.dumps(state)}))
    return out


def test_a_checkpoint_naming_code_is_refused_at_import(checkpoint, tmp_path, capsys):
    ck = checkpoint[0]
    for i, items in enumerate(_items(ck.parent)):
        if items == ["train.py"]:
            marker = evil_extension(ck.parent.parent, "train.py")
        else:
            marker = ck.parent / "ext" / "RAN"

        def edit(state, items=items):
            state["record"] = _with_extensions(state["record"], items)

        bad = _hostile_checkpoint(checkpoint, edit)
        store = tmp_path / f"s{i}"
        line = refuse(capsys, ["import", bad, "--store", store], "--extensions", memory=None)
        assert "never runs code" in line, line
        _check_no_code(capsys.readouterr().out, marker)
        assert not (store / "records.sqlite").exists() or _runs(store) == []


def _runs(store: Path) -> list:
    con = sqlite3.connect(store / "records.sqlite")
    try:
        return con.execute("SELECT id FROM runs").fetchall()
    finally:
        con.close()


def _poison_run(store: Path, rid: str, items: list[str]) -> None:
    """Give the stored run a record that names code, as a bundle from anyone could."""
    con = sqlite3.connect(store / "records.sqlite")
    (h,) = con.execute("SELECT record_hash FROM runs WHERE id = ?", (rid,)).fetchone()
    objects = ObjectStore(store)
    text = objects.get(h).decode()
    new = objects.put(_with_extensions(text, items).encode())
    con.execute("UPDATE runs SET record_hash = ? WHERE id = ?", (new, rid))
    con.commit()
    con.close()


@pytest.fixture()
def poisoned(trained, tmp_path):
    """A copy of the trained store whose run names an extension, brought in as a bundle."""
    d, store, rid = trained
    marker = evil_extension(tmp_path / "ext")
    src = tmp_path / "src"
    shutil.copytree(store, src)
    _poison_run(src, rid, [str(tmp_path / "ext" / "evil.py")])
    bundle = tmp_path / "run.tar"
    assert main(["runs", "export", rid, "--store", str(src), "-o", str(bundle)]) == 0
    dest = tmp_path / "dest"
    assert main(["runs", "import", str(bundle), "--store", str(dest)]) == 0
    return dest, rid, marker, tmp_path / "ext" / "evil.py"


def test_a_bundled_run_naming_code_runs_none_of_it(poisoned, tmp_path, capsys):
    store, rid, marker, ext = poisoned
    s = ["--store", store]
    for argv in (
        ["evaluate", rid, *s],
        ["predict", rid, *s],
        ["generate", rid, "--prompt", "a", *s],
        ["export", rid, "--to", "safetensors", "--out", tmp_path / "w.safetensors", *s],
        ["resume", rid, "--to-step", "5", "--device", "reference", *s],
        ["import", tmp_path / "w0.safetensors", "--record", rid, *s],
    ):
        refuse(capsys, argv, "--extensions", memory=None)
        assert not marker.exists(), argv[0]
    # code the user named that is not what the record names trusts nothing of it
    other = tmp_path / "other" / "helpers.py"
    other.parent.mkdir()
    other.write_text("X = 1\n")
    refuse(capsys, ["evaluate", rid, *s, "--extensions", other], "evil.py", memory=None)
    assert not marker.exists()
    # the user trusts it: the same command runs, with the code they named
    assert main(["evaluate", rid, *s, "--extensions", str(ext), "--json"]) == 0
    assert marker.exists()


def _with_config(store: Path, rid: str, copy: Path, edit) -> Path:
    """A copy of ``store`` whose run ``rid`` has its stored config changed by ``edit``,
    as a run bundle from anyone could carry it."""
    shutil.copytree(store, copy)
    con = sqlite3.connect(copy / "records.sqlite")
    (config,) = con.execute("SELECT config FROM runs WHERE id = ?", (rid,)).fetchone()
    config = json.loads(config)
    edit(config)
    con.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), rid))
    con.commit()
    con.close()
    return copy


def test_a_stored_runs_own_extensions_option_is_not_loaded_on_resume(trained, tmp_path, capsys):
    _, store, rid = trained
    marker = evil_extension(tmp_path / "ext")

    def name_code(config):
        config["options"]["extensions"] = [str(tmp_path / "ext" / "evil.py")]

    copy = _with_config(store, rid, tmp_path / "s", name_code)
    argv = ["resume", rid, "--store", copy, "--to-step", "5", "--device", "reference"]
    refuse(capsys, argv, "--extensions", memory=None)
    assert not marker.exists()


def test_a_record_file_the_user_runs_still_loads_its_code(tmp_path, capsys):
    rec = write_record(tmp_path)
    marker = evil_extension(tmp_path)
    rec.write_text(_with_extensions(rec.read_text(), ["evil.py"]))
    assert main(["validate", str(rec)]) == 0
    assert marker.exists()


def test_the_tab_runs_no_code_a_record_names(tmp_path):
    from scellis.run.prepare import RecordProblems, check_record  # noqa: PLC0415
    from scellis.webapp import model_api  # noqa: PLC0415

    rec = write_record(tmp_path)
    marker = evil_extension(tmp_path)
    for items in (["evil.py"], [str(tmp_path / "evil.py")], ["this"]):
        text = _with_extensions(rec.read_text(), items)
        with pytest.raises(RecordProblems, match="--extensions"):
            check_record(text, "tab.sml", base_dir=tmp_path)
        view = model_api.project(text)
        assert not view["ok"] and "--extensions" in json.dumps(view["diagnostics"])
        assert not marker.exists()


@pytest.mark.parametrize("source", ["/etc/passwd", "../../sentinel/secret.txt", "SENTINEL"])
def test_a_checkpoints_data_source_is_never_read_outside(checkpoint, tmp_path, capsys, source):
    sentinel = Sentinel(tmp_path / "sentinel")
    source = str(sentinel.root / "secret.txt") if source == "SENTINEL" else source
    base = tmp_path / "a" / "b"
    base.mkdir(parents=True)

    def edit(state):
        state["record"] = state["record"].replace("source: series.csv", f"source: {source}")

    bad = _hostile_checkpoint(checkpoint, edit)
    for extra in ([], ["--base-dir", base]):
        line = refuse(capsys, ["import", bad, "--store", tmp_path / "s", *extra], memory=None)
        assert not sentinel.secret_leaked(line) and "root:" not in line, line
    sentinel.unchanged()


def test_a_link_in_the_package_data_folder_is_not_followed(checkpoint, tmp_path, capsys):
    ck = checkpoint[0]
    sentinel = Sentinel(tmp_path / "sentinel")
    data = ck.parent.parent / "data"
    link = data / "linked.csv"
    link.symlink_to(sentinel.root / "secret.txt")
    try:

        def edit(state):
            state["record"] = state["record"].replace("source: series.csv", "source: linked.csv")

        bad = _hostile_checkpoint(checkpoint, edit)
        line = refuse(capsys, ["import", bad, "--store", tmp_path / "s"], memory=None)
        assert not sentinel.secret_leaked(line), line
    finally:
        link.unlink()


def test_a_stored_run_without_its_data_reads_no_path_it_names(trained, tmp_path, capsys):
    """A run whose config keeps no copy of its data (a bundle can say so) reads nothing
    from the disk by the path its record names."""
    _, store, rid = trained
    sentinel = Sentinel(tmp_path / "sentinel")

    def keep_nothing(config):
        config.pop("files", None)
        config["base_dir"] = str(sentinel.root)

    copy = _with_config(store, rid, tmp_path / "s", keep_nothing)
    (sentinel.root / "series.csv").write_text(f"value\n{SECRET}\n")
    sentinel.before = sentinel.snapshot()
    for argv in (["evaluate", rid], ["predict", rid], ["resume", rid, "--to-step", "5"]):
        line = refuse(capsys, [*argv, "--store", copy, "--device", "reference"], memory=None)
        assert "--data" in line or "train it again" in line, line
        assert not sentinel.secret_leaked(line)
    sentinel.unchanged()
