"""The store under hostile conditions: a folder the user may only read still lists and
evaluates its runs (and changes not a byte of it); SIGTERM during import, export or
evaluation ends as Ctrl-C does (one line, exit 130) and leaves no temp object behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ckptutil import make_package, run_ids
from hostile import Sentinel

from scellis.cli.main import main

SRC = str(Path(__file__).resolve().parents[2] / "src")
CLI = "import sys; from scellis.cli.main import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return make_package(tmp_path_factory.mktemp("store"))


def _unprivileged() -> list[str] | None:
    """A prefix that takes root's right to write anywhere away (none needed otherwise)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return None if setpriv is None else [setpriv, "--bounding-set=-dac_override,"
                                                  "-dac_read_search", "--"]  # fmt: skip


def _chmod_tree(root: Path, dirs: int, files: int) -> None:
    for p in [root, *root.rglob("*")]:
        p.chmod(dirs if p.is_dir() else files)


def test_a_read_only_store_still_lists_shows_and_evaluates(package, tmp_path):
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: a read-only folder is writable")
    store = tmp_path / "ro"
    shutil.copytree(package.parents[2] / "trained", store)
    (rid,) = run_ids(store)
    before = Sentinel.snapshot(type("S", (), {"root": store})())
    _chmod_tree(store, 0o555, 0o444)
    env = {**os.environ, "PYTHONPATH": SRC}
    try:
        for argv in (["runs", "--json"], ["runs", "show", rid], ["evaluate", rid, "--device",
                     "reference", "--json"], ["compare", rid, rid]):  # fmt: skip
            p = subprocess.run([*prefix, sys.executable, "-c", CLI, *argv, "--store", str(store)],
                               capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
            assert p.returncode == 0, (argv, p.stderr[-2000:])
            assert "Traceback" not in p.stderr
            if argv == ["runs", "--json"]:
                assert [r["id"] for r in json.loads(p.stdout)] == [rid]
    finally:
        _chmod_tree(store, 0o755, 0o644)
    after = Sentinel.snapshot(type("S", (), {"root": store})())
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}


# a wrapper that makes the first object write or read of a command wait (saying so on
# stderr), so the test can send SIGTERM while the command is mid-way through its work
SLOW = """
import sys, time
from scellis.store import objects
write, get = objects.Writer.write, objects.ObjectStore.get
def slow_write(self, fd, data):
    write(self, fd, data)
    print("SLOW", file=sys.stderr, flush=True)
    time.sleep(60)
def slow_get(self, h):
    print("SLOW", file=sys.stderr, flush=True)
    time.sleep(60)
    return get(self, h)
objects.Writer.write = slow_write
if "--slow-reads" in sys.argv:
    sys.argv.remove("--slow-reads")
    objects.ObjectStore.get = slow_get
from scellis.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _terminated(argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC}
    p = subprocess.Popen([sys.executable, "-c", SLOW, *map(str, argv)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    seen = []
    for line in p.stderr:
        seen.append(line)
        if line.strip() == "SLOW":
            break
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    return subprocess.CompletedProcess(argv, p.returncode, out, "".join(seen) + err)


def _temp_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.name.startswith(".tmp") or ".tmp" in p.name]


def _ends_like_ctrl_c(p) -> None:
    err = p.stderr.replace("SLOW\n", "")
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert err.strip() == "scellis: interrupted", err[-2000:]


def test_sigterm_during_checkpoint_import(package, tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(package.parents[1], pkg)
    store = tmp_path / "store"
    p = _terminated(["import", pkg / "checkpoints" / package.name, "--store", store,
                     "--device", "reference"])  # fmt: skip
    _ends_like_ctrl_c(p)
    assert not _temp_files(store) and run_ids(store) == []
    if (store / "records.sqlite").exists():  # rows come last: most often there are none
        assert main(["runs", "--store", str(store)]) == 0


def test_sigterm_during_bundle_import_and_export(package, tmp_path):
    trained = tmp_path / "trained"
    shutil.copytree(package.parents[2] / "trained", trained)
    bundle = tmp_path / "b.tar"
    assert main(["runs", "export", "last", "--store", str(trained), "-o", str(bundle)]) == 0
    store = tmp_path / "store"
    _ends_like_ctrl_c(_terminated(["runs", "import", bundle, "--store", store]))
    assert not _temp_files(store) and run_ids(store) == []
    out = tmp_path / "out"
    out.mkdir()
    p = _terminated(["export", "last", "--to", "torch-train", out / "pkg", "--store", trained,
                     "--slow-reads"])  # fmt: skip
    _ends_like_ctrl_c(p)
    assert not _temp_files(trained) and not _temp_files(out)


def test_sigterm_during_evaluate(package, tmp_path):
    store = tmp_path / "trained"
    shutil.copytree(package.parents[2] / "trained", store)
    (rid,) = run_ids(store)
    p = _terminated(["evaluate", rid, "--store", store, "--device", "reference",
                     "--slow-reads"])  # fmt: skip
    _ends_like_ctrl_c(p)
    assert not _temp_files(store)
