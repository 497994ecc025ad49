"""The object store: hashes, layout, verification on read, atomic writes, full disks."""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import scellis
from scellis.store.objects import ObjectStore, StoreError, StoreFullError, Writer

SRC = str(Path(scellis.__file__).resolve().parent.parent)


def test_put_get_roundtrip_and_layout(tmp_path):
    s = ObjectStore(tmp_path)
    blobs = [os.urandom(n) for n in (0, 1, 1000, 70_000)]
    hs = [s.put(b) for b in blobs]
    for b, h in zip(blobs, hs):
        assert h == hashlib.sha256(b).hexdigest()
        assert (tmp_path / "objects" / "sha256" / h[:2] / h[2:]).read_bytes() == b
        assert s.get(h) == b
    assert s.put(blobs[2]) == hs[2]  # idempotent
    assert sorted(h for h, _ in s.list()) == sorted(hs)
    assert s.temp_files() == []


def test_corrupt_and_missing_objects_are_refused_by_hash(tmp_path):
    s = ObjectStore(tmp_path)
    data = os.urandom(256)
    h = s.put(data)
    p = s.path(h)
    os.chmod(p, 0o644)
    bad = bytearray(data)
    bad[17] ^= 1
    p.write_bytes(bytes(bad))
    with pytest.raises(StoreError, match=f"{h} is corrupt .*; moved aside to .*quarantine"):
        s.get(h)
    # still corrupt to every later read, until the right bytes are stored again
    with pytest.raises(StoreError, match=f"{h} is corrupt"):
        s.get(h)
    assert not s.has(h)
    missing = hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(StoreError, match=f"{missing} is missing"):
        s.get(missing)
    with pytest.raises(StoreError, match="not a sha256"):
        s.get("../../etc/passwd")


def test_a_corrupt_object_is_moved_aside_and_replaced_by_a_verified_copy(tmp_path):
    s = ObjectStore(tmp_path)
    data = os.urandom(300)
    h = s.put(data)
    p = s.path(h)
    os.chmod(p, 0o644)
    bad = bytearray(data)
    bad[3] ^= 0x40
    p.write_bytes(bytes(bad))
    # a write of the same content finds the corrupt copy, moves it aside, writes fresh
    assert s.put(data) == h
    assert s.get(h) == data and p.read_bytes() == data
    (aside,) = s.quarantined(h)
    assert aside.read_bytes() == bytes(bad)
    assert aside.parent == tmp_path / "quarantine" / "sha256"
    # the quarantine is not an object, nor collected as one
    assert [x for x, _ in s.list()] == [h]
    # a read that finds it corrupt moves it aside too; the next write repairs it
    p.chmod(0o644)
    p.write_bytes(bytes(bad))
    with pytest.raises(StoreError, match="moved aside"):
        s.get(h)
    assert len(s.quarantined(h)) == 2 and not p.exists()
    assert s.put(data) == h and s.get(h) == data


class _HalfThenFail(Writer):
    def __init__(self, exc):
        self.exc = exc

    def write(self, fd, data):
        os.write(fd, data[: len(data) // 2])
        raise self.exc


def test_a_write_that_fails_midway_leaves_nothing(tmp_path):
    s = ObjectStore(tmp_path)
    keep = s.put(b"earlier object")
    failing = ObjectStore(tmp_path, writer=_HalfThenFail(OSError(errno.EIO, "I/O error")))
    with pytest.raises(StoreError, match="cannot write object"):
        failing.put(os.urandom(4096))
    assert [h for h, _ in s.list()] == [keep] and s.temp_files() == []


def test_enospc_is_a_clear_store_full_error(tmp_path):
    failing = ObjectStore(tmp_path, writer=_HalfThenFail(OSError(errno.ENOSPC, "No space")))
    with pytest.raises(StoreFullError, match="is full"):
        failing.put(os.urandom(4096))
    assert failing.list() == [] and failing.temp_files() == []


def test_a_real_full_tmpfs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)])
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); the injected ENOSPC test covers it")
    try:
        s = ObjectStore(mnt)
        small = s.put(os.urandom(1000))
        with pytest.raises(StoreFullError):
            s.put(os.urandom(200_000))
        assert [h for h, _ in s.list()] == [small] and s.temp_files() == []
        assert len(s.get(small)) == 1000
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_process_killed_mid_object_leaves_no_visible_object(tmp_path):
    # the child writes half an object and dies without any clean-up (os._exit)
    code = f"""
import os
from scellis.store.objects import ObjectStore, Writer
class Die(Writer):
    def write(self, fd, data):
        os.write(fd, data[: len(data) // 2])
        os._exit(9)
ObjectStore({str(tmp_path)!r}).put(b"before")
ObjectStore({str(tmp_path)!r}, writer=Die()).put(os.urandom(10000) + {uuid.uuid4().bytes!r})
"""
    r = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": SRC})
    assert r.returncode == 9
    s = ObjectStore(tmp_path)
    assert [h for h, _ in s.list()] == [hashlib.sha256(b"before").hexdigest()]
    assert len(s.temp_files()) == 1  # the half file exists only under a temp name
    assert s.get(hashlib.sha256(b"before").hexdigest()) == b"before"
