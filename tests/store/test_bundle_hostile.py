"""Hostile run bundles and damaged records: one clear line, exit 2, and no row written.

A real bundle (a short run trained and exported here) is edited: its run.json replaced
by other JSON, its rows given wrong types, its members renamed or dropped. Every
refusal happens before the store gains a row.
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
import tarfile

import pytest

from scellis.base.errors import ScellisError
from scellis.cli.main import main
from scellis.store.bundle import import_run
from scellis.store.objects import ObjectStore
from scellis.store.records import Records
from storeutil import write_record


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> bytes:
    d = tmp_path_factory.mktemp("bundle")
    rec, store = write_record(d), d / "s"
    argv = ["train", str(rec), "--store", str(store), "--device", "reference", "--json",
            "--max-steps", "3", "--checkpoint-every", "2"]  # fmt: skip
    assert main(argv) == 0
    out = d / "run.tar"
    assert main(["runs", "export", "last", "--store", str(store), "-o", str(out)]) == 0
    return out.read_bytes()


def _members(data: bytes) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return [(m, tar.extractfile(m).read()) for m in tar.getmembers()]


def _tar(items) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in items:
            info = info if isinstance(info, tarfile.TarInfo) else tarfile.TarInfo(info)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _with_run_json(data: bytes, edit) -> bytes:
    items = []
    for m, b in _members(data):
        if m.name == "run.json":
            b = edit(json.loads(b)) if callable(edit) else edit
            b = b if isinstance(b, bytes) else json.dumps(b).encode()
        items.append((m, b))
    return _tar(items)


def _row(table, **cols):
    def edit(rows):
        target = rows["run"] if table == "run" else rows[table][0]
        target.update(cols)
        return rows

    return edit


def _refused(tmp_path, capsys, data: bytes, match: str) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)
    f, store = tmp_path / "b.tar", tmp_path / "store"
    f.write_bytes(data)
    assert main(["runs", "import", str(f), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert re.search(match, err), err
    r = Records(store)
    try:
        assert r.runs() == [] and r.db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 0
    finally:
        r.close()


CASES = {
    "a list": (lambda rows: [rows], "run.json is a list"),
    "nested": (b"[" * 100_000 + b"]" * 100_000, "nests"),
    "huge integer": (b'{"format": ' + b"9" * 5000 + b"}", "5000-digit number"),
    "text started": (_row("run", started="yesterday"), "runs.started is str"),
    "text metric": (_row("metrics", value="low"), "metrics.value is str"),
    "text step": (_row("checkpoints", step="4"), "checkpoints.step is '4'"),
    "huge step": (_row("metrics", step=2**63), "digit number|not a whole number"),
    "negative step": (_row("metrics", step=-1), "metrics.step is -1"),
    "huge time": (_row("run", started=9_999_999_999_999_999_999), "runs.started is .*over 63"),
    "huge value": (_row("metrics", value=-(2**63) - 5), "metrics.value is .*over 63"),
    "bool pid": (_row("run", pid=True), "runs.pid is True"),
    "nan started": (_row("run", started=float("nan")), "not a time|holds NaN"),
    "unknown column": (_row("run", evil=1), "unknown column 'evil'"),
    "unknown status": (_row("run", status="pwned"), "not one of"),
    "other run id": (_row("metrics", run_id="someone-else"), "name a run other"),
    "bad run id": (_row("run", id="../../x"), "not a run id"),
    "argv not JSON": (_row("run", argv="rm -rf"), "argv is not JSON"),
    "argv of numbers": (_row("run", argv="[1, 2]"), "argv holds"),
    "config a list": (_row("run", config="[]"), "config is not a JSON dict"),
    "record hash": (_row("run", record_hash="x" * 64), "not a sha256"),
    "missing started": (_row("run", started=None), "lacks started"),
    "repeated step": (
        lambda rows: {**rows, "checkpoints": rows["checkpoints"] * 2},
        "repeat a step",
    ),
    "extra entry": (lambda rows: {**rows, "evil": []}, "unknown entries"),
    "metrics a dict": (lambda rows: {**rows, "metrics": {}}, "metrics is not a list"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_run_json_is_refused_before_any_row(tmp_path, capsys, bundle, case):
    edit, match = CASES[case]
    _refused(tmp_path, capsys, _with_run_json(bundle, edit), match)


def test_hostile_members_are_refused_before_any_row(tmp_path, capsys, bundle):
    items = _members(bundle)
    objs = [(m, b) for m, b in items if m.name.startswith("objects/")]
    # a manifest or the record missing
    _refused(tmp_path / "a", capsys, _tar(items[:-1]), "lacks")
    # a member that is not an object
    _refused(tmp_path / "b", capsys, _tar([*items, ("notes.txt", b"x")]), "unexpected member")
    # an object twice
    _refused(tmp_path / "c", capsys, _tar([*items, objs[0]]), "appears twice")
    # a link
    link = tarfile.TarInfo("objects/" + "0" * 64)
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    _refused(tmp_path / "d", capsys, _tar([*items, (link, b"")]), "not a plain file")
    # an object whose bytes are not its name
    bad = [(m, b + b"!" if m is objs[0][0] else b) for m, b in items]
    _refused(tmp_path / "e", capsys, _tar(bad), "hashes to")
    # not a tar at all, and a tar cut short
    _refused(tmp_path / "f", capsys, b"hello", "not a run bundle")
    _refused(tmp_path / "g", capsys, bundle[: len(bundle) // 2], "not a run bundle|cut short|lacks")


def test_the_untouched_bundle_imports(tmp_path, capsys, bundle):
    f = tmp_path / "b.tar"
    f.write_bytes(bundle)
    assert main(["runs", "import", str(f), "--store", str(tmp_path / "s")]) == 0
    assert "imported run" in capsys.readouterr().out


def _store_with_a_run(tmp_path, bundle):
    root = tmp_path / "s"
    r = Records(root)
    import_run(ObjectStore(root), r, bundle)
    r.close()
    return root


def test_a_damaged_records_file_is_named(tmp_path, capsys, bundle):
    root = _store_with_a_run(tmp_path, bundle)
    db = root / "records.sqlite"
    with sqlite3.connect(db) as c:  # fold the WAL in, so the damage below is what is read
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(db.read_bytes())
    page = 4096 if len(raw) > 8192 else 1024
    for i in range(page, len(raw)):
        raw[i] = 0xA5
    db.write_bytes(bytes(raw))
    assert main(["runs", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert "records.sqlite" in err and err.count("\n") == 1 and "Traceback" not in err


def test_an_emptied_records_file_is_not_an_empty_store(tmp_path, capsys, bundle):
    root = _store_with_a_run(tmp_path, bundle)
    (root / "records.sqlite").write_bytes(b"")
    for extra in ("-wal", "-shm"):
        (root / f"records.sqlite{extra}").unlink(missing_ok=True)
    assert main(["runs", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert "records.sqlite is empty (0 bytes) but the store holds objects" in err


def test_a_store_that_is_a_file(tmp_path, capsys, bundle):
    f = tmp_path / "plain"
    f.write_text("x")
    b = tmp_path / "b.tar"
    b.write_bytes(bundle)
    assert main(["runs", "import", str(b), "--store", str(f)]) == 2
    assert "is a file, not a store folder" in capsys.readouterr().err
    for argv in (["runs", "--store", str(f)], ["runs", "show", "last", "--store", str(f)]):
        assert main(argv) == 2
        assert "is a file, not a store folder" in capsys.readouterr().err
    with pytest.raises(ScellisError, match="is a file"):
        Records(f)


def test_a_corrupt_checkpoint_object_is_replaced_by_its_bundle(tmp_path, capsys, bundle):
    root = _store_with_a_run(tmp_path, bundle)
    objects = ObjectStore(root)
    r = Records(root)
    (rid,) = [x["id"] for x in r.runs()]
    manifest = r.checkpoints(rid)[-1]["manifest"]
    r.close()
    weights = json.loads(objects.get(manifest))["weights"]
    good = objects.get(weights)
    path = objects.path(weights)
    path.chmod(0o644)
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 0xFF]))
    with pytest.raises(ScellisError, match=f"object {weights} is corrupt.*moved aside"):
        objects.get(weights)
    # the run's own bundle carries the right bytes: importing it again writes them fresh
    f = tmp_path / "again.tar"
    f.write_bytes(bundle)
    assert main(["runs", "import", str(f), "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert "already in" in err and "1 corrupt object(s) of it were replaced" in err, err
    assert objects.get(weights) == good
    (aside,) = objects.quarantined(weights)
    assert aside.read_bytes() != good and aside.is_relative_to(root / "quarantine")


@pytest.mark.parametrize(
    ("column", "value"),
    [("argv", "not json"), ("config", "[1, 2]"), ("status", "running")],
)
def test_a_damaged_run_row_is_named(tmp_path, capsys, bundle, column, value):
    root = _store_with_a_run(tmp_path, bundle)
    with sqlite3.connect(root / "records.sqlite") as c:
        c.execute(f"UPDATE runs SET {column}=?", (value,))
        if column == "status":  # a running row whose host is elsewhere and heartbeat is text
            c.execute("UPDATE runs SET host='elsewhere', heartbeat='soon'")
    assert main(["runs", "--store", str(root)]) == 2
    err = capsys.readouterr().err
    assert "records.sqlite: the row of run" in err and "is damaged" in err, err
    assert err.count("\n") == 1
