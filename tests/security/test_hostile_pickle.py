"""Hostile PyTorch archives: pickles whose few bytes ask for unbounded work.

A tensor view names its size and strides; copying it out takes its full size and one
step per strided row. A few hundred bytes can name a stride-0 view of gigabytes or of
millions of rows, so both are bounded by the archive's own size before any copy.

A pickle's memo lets a tuple name the one before it twice: 60 levels are 2**60
elements to hash (as a dict key) or to print (in a message), and a key of tuples nested
200,000 deep overflows the C stack when hashed. These run in a child process, so a
crash or a hang fails the test instead of ending the session.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import refuse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codecs"))
from ptfiles import archive, rebuild, state_dict_pickle  # noqa: E402

from scellis.cli.main import main  # noqa: E402
from scellis.codecs import make  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _valid_first(tmp_path_factory):
    """A state dict of a transposed and a column view imports (and the command's modules
    are loaded before any refusal is timed)."""
    d = tmp_path_factory.mktemp("valid")
    pkl = state_dict_pickle(
        [
            ("t", rebuild("FloatStorage", "0", 6, 0, [3, 2], [1, 3])),
            ("c", rebuild("FloatStorage", "0", 6, 1, [2, 1], [3, 1])),
        ]
    )
    data = os.urandom(24)
    (d / "v.pt").write_bytes(archive(pkl, {"0": data}))
    assert main(["import", str(d / "v.pt"), "--store", str(d / "s")]) == 0
    got = make("codec/torch").read(d / "v.pt").tensors
    f = [data[4 * i : 4 * i + 4] for i in range(6)]
    assert got["t"].data == b"".join(f[i + 3 * j] for i in range(3) for j in range(2))
    assert got["c"].data == f[1] + f[4]


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


SRC = str(Path(__file__).resolve().parents[2] / "src")
RUN = "import sys; sys.path.insert(0, sys.argv[1]); from scellis.cli.main import main; " \
      "sys.exit(main(sys.argv[2:]))"  # fmt: skip


def _child(tmp_path, pkl: bytes) -> tuple[int, str]:
    p = tmp_path / "k.pt"
    p.write_bytes(archive(pkl, {}))
    argv = [sys.executable, "-c", RUN, SRC, "import", str(p), "--store", str(tmp_path / "s")]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return -1, "timed out"
    return r.returncode, r.stderr


def _dag(levels: int) -> bytes:
    """Opcodes leaving t_levels on the stack: t_0 = (), t_{i+1} = (t_i, t_i) by memo."""
    out = b")q\x000"  # EMPTY_TUPLE, BINPUT 0, POP
    for i in range(levels):
        out += b"h%ch%c\x86q%c0" % (i, i, i + 1)  # BINGET i twice, TUPLE2, BINPUT, POP
    return out + b"h%c" % levels


CHILD_CASES = {
    "deep tuple key": b"\x80\x02}" + b")" + b"\x85" * 200_000 + b"K\x01s.",
    "shared tuple key": b"\x80\x02}" + _dag(60) + b"K\x01s.",
    "shared tuple in a set": b"\x80\x04\x8f(" + _dag(60) + b"\x90.",
    "shared tuple in a message": b"\x80\x02" + _dag(60) + b"Q.",
}


@pytest.mark.parametrize("case", sorted(CHILD_CASES))
def test_pickles_that_crash_or_never_end_are_one_message(tmp_path, case):
    rc, err = _child(tmp_path, CHILD_CASES[case])
    lines = err.strip().splitlines()
    assert rc == 2, f"exit {rc}: {err[-500:]}"
    assert len(lines) == 1 and "Traceback" not in err and len(lines[0]) < 400, err[-500:]
    assert not (tmp_path / "s" / "objects").exists()
