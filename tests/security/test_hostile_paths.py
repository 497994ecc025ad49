"""Paths that are not regular files: a FIFO, /dev/zero, /dev/urandom, a folder. Every
command that reads or writes a path the user names refuses them at once (one line, exit
2): none opens a FIFO and waits for a writer, none reads a device without end."""

from __future__ import annotations

import os
import signal

import pytest
from hostile import refuse

from storeutil import write_record


@pytest.fixture()
def alarm():
    """A hang fails the test instead of stalling the suite."""

    def timeout(signum, frame):
        raise AssertionError("the command blocked on its input")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


READERS = [
    ["validate", "{p}"], ["plan", "{p}"], ["compile", "{p}"], ["profile", "{p}"],
    ["train", "{p}", "--device", "reference"], ["models", "save", "{p}"],
    ["import", "{p}"], ["runs", "import", "{p}"], ["export", "{p}", "--to", "pt"],
    ["export", "{p}", "--to", "torch-train", "{tmp}/pkg"],
    ["import", "{rec}", "--record", "{p}"], ["import", "{rec}", "--map", "{p}"],
    ["train", "{rec}", "--device", "reference", "--set", "data.source={p}"],
]  # fmt: skip
WRITERS = [
    ["export", "{rec}", "--to", "pt", "--out", "{p}"],
    ["export", "{rec}", "--to", "safetensors", "--out", "{p}"],
    ["import", "{rec}", "--to", "{p}"],
]  # fmt: skip


def _paths(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return {"fifo": fifo, "zero": "/dev/zero", "urandom": "/dev/urandom"}


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom"])
def test_readers_refuse_what_is_not_a_file(tmp_path, capsys, alarm, kind):
    rec = write_record(tmp_path)
    p = _paths(tmp_path)[kind]
    for argv in READERS:
        args = [a.format(p=p, rec=rec, tmp=tmp_path) for a in argv]
        refuse(capsys, [*args, "--store", tmp_path / "s"] if argv[0] != "validate" else args,
               memory=None)  # fmt: skip


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_writers_refuse_what_is_not_a_file(tmp_path, capsys, alarm, kind):
    rec = write_record(tmp_path)
    p = _paths(tmp_path)[kind]
    for argv in WRITERS:
        args = [a.format(p=p, rec=rec, tmp=tmp_path) for a in argv]
        refuse(capsys, [*args, "--store", tmp_path / "s"], "cannot write", memory=None)
