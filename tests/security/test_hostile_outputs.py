"""Every other command that writes a file the user names (``predict --out``, ``runs
export -o``, ``runs export-metrics -o``, ``compare --png``, ``import --to``, ``init``)
against hostile outputs: a link out of the folder, an earlier file, a FIFO, a folder.
Refusals are one line, exit 2, before any work; nothing outside the output changes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hostile import Sentinel, refuse

from scellis.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from storeutil import write_record  # noqa: E402


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(a run id, its store, a safetensors export of its record that import reads)."""
    folder = tmp_path_factory.mktemp("trained")
    rec = write_record(folder, seed=int.from_bytes(os.urandom(2), "little") + 1)
    store = folder / "store"
    argv = ["train", rec, "--store", store, "--device", "reference", "--json"]
    out = folder / "train.out"
    real = sys.stdout
    with out.open("w") as sys.stdout:
        rc = main([str(a) for a in argv])
    sys.stdout = real
    assert rc == 0
    run = json.loads(out.read_text().strip().splitlines()[-1])["run"]
    weights = folder / "w.safetensors"
    assert main(["export", str(rec), "--to", "safetensors", "--out", str(weights)]) == 0
    return run, store, weights


# a writer: the command line that writes OUT, and whether its file can be checked here
WRITERS = {
    "predict": lambda run, store, w, out: [
        "predict", run, "--store", store, "--out", out, "--device", "reference"],
    "runs-export": lambda run, store, w, out: ["runs", "export", run, "-o", out, "--store", store],
    "export-metrics": lambda run, store, w, out: [
        "runs", "export-metrics", run, "-o", out, "--store", store],
    "import": lambda run, store, w, out: ["import", w, "--to", out, "--store", store],
    "init": lambda run, store, w, out: ["init", out],
    "compare-png": lambda run, store, w, out: ["compare", run, run, "--store", store, "--png", out],
}  # fmt: skip
WRITES = sorted(set(WRITERS) - {"compare-png"})  # compare's PNG needs matplotlib


@pytest.fixture
def place(tmp_path, trained):
    """(a function OUT -> argv, the folder outputs go to, a sentinel beside it)."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    return trained, out_dir, Sentinel(tmp_path / "sentinel")


def _argv(trained, writer, out, *extra):
    return [str(a) for a in [*WRITERS[writer](*trained, out), *extra]]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_is_never_written_through(place, capsys, writer):
    trained, out_dir, sentinel = place
    for target in (sentinel.root / "secret.txt", sentinel.root / "missing.txt"):
        out = out_dir / "linked.out"
        out.symlink_to(target)
        for extra in ((), ("--force",)):
            line = refuse(capsys, _argv(trained, writer, out, *extra), "symbolic link")
            assert not sentinel.secret_leaked(line)
        out.unlink()
    sentinel.unchanged()
    assert not (sentinel.root / "missing.txt").exists()


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_fifo_or_a_folder_is_refused_before_work(place, capsys, writer):
    trained, out_dir, sentinel = place
    fifo = out_dir / "pipe.out"
    os.mkfifo(fifo)
    refuse(capsys, _argv(trained, writer, fifo, "--force"), "FIFO")
    refuse(capsys, _argv(trained, writer, out_dir, "--force"), "a folder|a directory")
    sentinel.unchanged()


@pytest.mark.parametrize("writer", WRITES)
def test_an_earlier_file_is_replaced_only_with_force(place, capsys, writer):
    trained, out_dir, sentinel = place
    out = out_dir / "earlier.out"
    earlier = os.urandom(256)
    out.write_bytes(earlier)
    line = refuse(capsys, _argv(trained, writer, out), "exists; pass --force to replace it")
    assert "earlier.out" in line
    assert out.read_bytes() == earlier
    assert main(_argv(trained, writer, out, "--force")) == 0, capsys.readouterr().err
    assert out.read_bytes() != earlier and out.stat().st_size > 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["earlier.out"]  # no temporaries
    sentinel.unchanged()


def test_a_linked_tensorboard_folder_is_refused(place, capsys):
    (run, store, _), out_dir, sentinel = place
    (out_dir / "tb").symlink_to(sentinel.root, target_is_directory=True)
    argv = ["runs", "export-metrics", run, "--format", "tensorboard", "-o", out_dir / "tb",
            "--store", store]  # fmt: skip
    refuse(capsys, argv, "symbolic link")
    sentinel.unchanged()


def test_a_path_that_would_break_the_line_stays_one_line(place, capsys):
    trained, out_dir, sentinel = place
    out = out_dir / "two\nlines.out"
    out.write_bytes(os.urandom(8))
    line = refuse(capsys, _argv(trained, "runs-export", out), "exists")
    assert "\\n" in line
    sentinel.unchanged()
