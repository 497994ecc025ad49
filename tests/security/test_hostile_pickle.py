"""Hostile PyTorch archives: views that copy out far more than the file holds.

A tensor view names its size and strides; copying it out takes its full size and one
step per strided row. A few hundred bytes can name a stride-0 view of gigabytes or of
millions of rows, so both are bounded by the archive's own size before any copy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hostile import refuse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codecs"))
from ptfiles import archive, rebuild, state_dict_pickle  # noqa: E402


def _pt(tmp_path, size, stride, storage: bytes):
    pkl = state_dict_pickle([("w", rebuild("ByteStorage", "0", len(storage), 0, size, stride))])
    p = tmp_path / "w.pt"
    p.write_bytes(archive(pkl, {"0": storage}))
    return p


def test_an_expanded_view_larger_than_the_file_allows_is_refused(tmp_path, capsys):
    # 128 MiB of one repeated byte, from an archive of under a kilobyte
    p = _pt(tmp_path, [2048, 1 << 16], [0, 0], os.urandom(1))
    refuse(capsys, ["import", p, "--store", tmp_path / "s"], "size cap")
    assert not (tmp_path / "s" / "objects").exists()


def test_a_view_of_millions_of_rows_is_refused(tmp_path, capsys):
    # 8 MiB, but four million strided rows: one Python step each
    p = _pt(tmp_path, [4096, 1024, 2], [0, 1, 0], os.urandom(1024))
    refuse(capsys, ["import", p, "--store", tmp_path / "s"], "pieces")
