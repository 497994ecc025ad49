"""Test harness run as a subprocess: ``python harness.py SPEC_JSON``.

Runs ``scellis train``/``resume`` in this process through the CLI's own entry points,
with optional failure injection through the explicit seams (``fault``, ``writer``):
- ``pause_after``: after step N's metrics are committed, print ``PAUSED`` and wait
  for a line on stdin (the test SIGKILLs or SIGINTs this process at a known step);
- ``die``: ``{"point": P, "step": K}``: ``os._exit(9)`` at fault point P of the
  checkpoint at step K (``mid_object``: halfway through the next object's bytes);
- ``enospc_at``: the checkpoint at step K hits a full disk.
"""

from __future__ import annotations

import errno
import json
import os
import sys

from scellis.cli import resume, train
from scellis.cli.main import main
from scellis.store.objects import Writer
from scellis.store.records import Records


class Armed(Writer):
    """Writes normally until armed; then fails the next object halfway."""

    def __init__(self, how: str):
        self.how, self.armed = how, False

    def write(self, fd, data):
        if not self.armed:
            return super().write(fd, data)
        os.write(fd, data[: len(data) // 2])
        if self.how == "exit":
            os._exit(9)
        raise OSError(errno.ENOSPC, "No space left on device")


def run(spec: dict) -> int:
    pause = spec.get("pause_after")
    if pause is not None:
        original = Records.log

        paused = []

        def log(self, rid, step, epoch, values):
            original(self, rid, step, epoch, values)
            if step == pause and not paused:  # once: a step's eval logs a second row
                paused.append(step)
                print("PAUSED", flush=True)
                sys.stdin.readline()

        Records.log = log
    die, enospc = spec.get("die"), spec.get("enospc_at")
    writer = fault = None
    if die and die["point"] == "mid_object":
        writer = Armed("exit")
    elif enospc is not None:
        writer = Armed("enospc")
    if die or enospc is not None:

        def fault(point, step):
            if die and step == die["step"]:
                if die["point"] == "mid_object" and point == "after_weights":
                    writer.armed = True
                elif point == die["point"]:
                    os._exit(9)
            if enospc is not None and step == enospc and point == "after_weights":
                writer.armed = True

    if spec["cmd"] == "resume" and not (fault or writer):
        return main(["resume", *spec["argv"]])
    if spec["cmd"] == "train" and not (fault or writer):
        return main(["train", *spec["argv"]])
    a = spec["kw"]
    if spec["cmd"] == "train":
        return train.start(**a, argv=["test"], fault=fault, writer=writer)
    return resume.resume(**a, fault=fault, writer=writer)


if __name__ == "__main__":
    sys.exit(run(json.loads(sys.argv[1])))
