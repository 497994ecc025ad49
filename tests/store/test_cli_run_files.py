"""``scellis train`` on a user's CSV keeps the file with the run (by sha256, in its
config's ``files``): a resume after the CSV was deleted or changed reads the kept copy,
and the run's bundle carries it to another store. The oracle: the same run trained
without a break (debug tier on the reference device: bitwise)."""

from __future__ import annotations

import json
import shutil

import pytest

from scellis.cli.main import main
from scellis.store.objects import ObjectStore, sha256
from scellis.store.records import Records
from storeutil import write_record


def _cli(capsys, *argv) -> list[dict]:
    code = main(list(argv))
    out = capsys.readouterr()
    assert code == 0, out.err
    return [json.loads(x) for x in out.out.splitlines() if x.startswith("{")]


def _losses(events) -> dict[int, float]:
    return {e["step"]: e["loss"] for e in events if e["kind"] == "log"}


def _train(capsys, rec, store, steps):
    return _cli(capsys, "train", str(rec), "--store", str(store), "--device", "reference",
                "--json", "--checkpoint-every", "3", "--max-steps", str(steps))  # fmt: skip


def _record(tmp_path, where: str):
    """The tiny record naming its CSV by a relative path, an absolute one, or ``..``."""
    folder = tmp_path / "user" / "work"
    folder.mkdir(parents=True)
    rec = write_record(folder)
    csv = folder / "series.csv"
    if where != "relative":
        moved = tmp_path / "user" / "series.csv"
        csv.rename(moved)
        csv = moved
        source = str(moved) if where == "absolute" else "../series.csv"
        rec.write_text(rec.read_text().replace("source: series.csv", f"source: {source}"))
    return rec, csv


@pytest.mark.parametrize("where", ["relative", "absolute", "parent"])
def test_a_run_keeps_its_csv_and_resumes_after_the_file_is_gone(tmp_path, capsys, where):
    rec, csv = _record(tmp_path, where)
    oracle = _losses(_train(capsys, rec, tmp_path / "oracle", 12))
    store = tmp_path / "s"
    first = _train(capsys, rec, store, 7)
    rid = first[-1]["run"]
    r = Records(store)
    try:
        files = r.run(rid)["config"]["files"]
    finally:
        r.close()
    (source,) = files
    assert files[source] == sha256(csv.read_bytes())
    assert ObjectStore(store).get(files[source]) == csv.read_bytes()
    # the user deletes the CSV; a resume reads the run's copy (not the record's path)
    original = csv.read_bytes()
    csv.unlink()
    more = _cli(capsys, "resume", rid, "--store", str(store), "--device", "reference",
                "--to-step", "10", "--json")  # fmt: skip
    assert _losses(more) == {s: v for s, v in oracle.items() if 7 < s <= 10}
    # a different file at that path changes nothing: the kept bytes are the run's data
    csv.write_text("value\n" + "".join(f"{i * 0.5}\n" for i in range(70)))
    bundle = tmp_path / "run.tar"
    main(["runs", "export", rid, "-o", str(bundle), "--store", str(store)])
    capsys.readouterr()
    # the bundle carries it: another store, with the store and CSV it came from gone
    shutil.rmtree(store)
    other = tmp_path / "other"
    main(["runs", "import", str(bundle), "--store", str(other)])
    capsys.readouterr()
    got = _cli(capsys, "resume", rid, "--store", str(other), "--device", "reference",
               "--to-step", "12", "--json")  # fmt: skip
    assert _losses(got) == {s: v for s, v in oracle.items() if s > 10}
    kept = list((other / "files" / rid).rglob("series.csv"))
    assert [p.read_bytes() for p in kept] == [original]
    assert all(p.resolve().is_relative_to((other / "files" / rid).resolve()) for p in kept)


def test_a_bundled_source_keeps_no_file(tmp_path, capsys):
    rec = write_record(tmp_path)
    rec.write_text(
        rec.read_text()
        .replace("source: series.csv", "source: bundled:sunspots_yearly.csv")
        .replace("column: value", "column: sunspots")
    )
    rid = _train(capsys, rec, tmp_path / "s", 2)[-1]["run"]
    r = Records(tmp_path / "s")
    try:
        assert "files" not in r.run(rid)["config"]
    finally:
        r.close()


def test_a_corrupt_kept_copy_is_named_not_read(tmp_path, capsys):
    rec, csv = _record(tmp_path, "relative")
    store = tmp_path / "s"
    rid = _train(capsys, rec, store, 4)[-1]["run"]
    r = Records(store)
    try:
        (h,) = r.run(rid)["config"]["files"].values()
    finally:
        r.close()
    obj = ObjectStore(store).path(h)
    obj.chmod(0o644)
    obj.write_bytes(b"value\n1\n2\n")
    code = main(["resume", rid, "--store", str(store), "--device", "reference",
                 "--to-step", "6"])  # fmt: skip
    err = capsys.readouterr().err
    assert code != 0 and "corrupt" in err and h[:12] in err, err
    assert "Traceback" not in err
