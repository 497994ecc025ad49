"""Pinned data files kept in the tab's persistent folder and written back after a reload."""

from __future__ import annotations

import os
import random

from scellis.webapp import kept_data


def test_a_kept_file_is_written_back_byte_for_byte(tmp_path):
    rng = random.Random()
    src = tmp_path / "work" / "datasets" / "load.csv"
    src.parent.mkdir(parents=True)
    data = os.urandom(rng.randrange(10, 4000))
    src.write_bytes(data)
    persistent = tmp_path / "scellis"
    persistent.mkdir()
    kept = persistent / "datasets"
    assert kept_data.keep(src, str(kept))
    fresh = tmp_path / "after-reload" / "datasets"
    assert kept_data.restore_data(str(kept), str(fresh)) == ["load.csv"]
    assert (fresh / "load.csv").read_bytes() == data
    # a file already in place is left alone; one that differs is written again
    assert kept_data.restore_data(str(kept), str(fresh)) == []
    (fresh / "load.csv").write_bytes(data[::-1] + b"x")
    assert kept_data.restore_data(str(kept), str(fresh)) == ["load.csv"]
    assert (fresh / "load.csv").read_bytes() == data


def test_without_the_persistent_folder_nothing_is_kept(tmp_path):
    src = tmp_path / "a.csv"
    src.write_text("t,v\n1,2\n")
    assert not kept_data.keep(src, str(tmp_path / "absent" / "datasets"))
    assert kept_data.restore_data(str(tmp_path / "absent" / "datasets"), str(tmp_path)) == []
