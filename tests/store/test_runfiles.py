"""A run's data files kept as objects and written back out (store.runfiles), and the
checks on what a bundle may name: every copy lands inside the folder it is given (a
path outside it is kept under ``outside/``), only hashes of objects the store has."""

from __future__ import annotations

import pytest

from scellis.base.errors import ScellisError
from scellis.store import runfiles
from scellis.store.objects import ObjectStore, sha256


def test_keep_then_materialize_round_trips(tmp_path):
    objects = ObjectStore(tmp_path / "st")
    src = tmp_path / "in" / "river.csv"
    src.parent.mkdir()
    src.write_bytes(b"t,v\n1,2.5\n2,3.5\n")
    files = runfiles.keep(objects, {"datasets/river.csv": src})
    assert files == {"datasets/river.csv": sha256(src.read_bytes())}
    out = runfiles.materialize(objects, files, tmp_path / "out")
    assert (out / "datasets" / "river.csv").read_bytes() == src.read_bytes()
    # a stale file at that path is replaced by the kept bytes
    (out / "datasets" / "river.csv").write_bytes(b"changed")
    runfiles.materialize(objects, files, out)
    assert (out / "datasets" / "river.csv").read_bytes() == src.read_bytes()


@pytest.mark.parametrize("source", ["/etc/passwd", "../outside.csv", "a/../../b.csv", "C:/d/x.csv"])
def test_a_path_outside_the_folder_is_written_inside_it(tmp_path, source):
    # a native run may name its CSV anywhere; its copy (and a bundle's) stays in the folder
    objects = ObjectStore(tmp_path / "st")
    h = objects.put(b"x")
    out = tmp_path / "out"
    (path,) = runfiles.local_sources(objects, {source: h}, out).values()
    name = source.rsplit("/", 1)[1]
    assert path == (out / "outside" / h[:16] / name).resolve() and path.read_bytes() == b"x"
    assert [p for p in tmp_path.rglob("*") if p.is_file() and "st" not in p.parts] == [path]
    record = {"data": {"source": source, "format": "csv"}, "seed": 1}
    assert runfiles.with_local_data(record, {source: path}) == {
        "data": {"source": str(path), "format": "csv"}, "seed": 1,
    }  # fmt: skip


@pytest.mark.parametrize("source", ["", "a/..", "/"])
def test_a_source_that_names_no_file_is_refused(tmp_path, source):
    objects = ObjectStore(tmp_path / "st")
    h = objects.put(b"x")
    with pytest.raises(ScellisError, match="names no file"):
        runfiles.materialize(objects, {source: h}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_missing_object_or_file_is_named(tmp_path):
    objects = ObjectStore(tmp_path / "st")
    with pytest.raises(ScellisError, match="missing"):
        runfiles.materialize(objects, {"d.csv": "ab" * 32}, tmp_path / "out")
    with pytest.raises(ScellisError, match="cannot keep the run's data file d.csv"):
        runfiles.keep(objects, {"d.csv": tmp_path / "nope.csv"})
