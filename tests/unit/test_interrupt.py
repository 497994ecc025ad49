"""``base.interrupt.run_until_done``: one Ctrl-C stops a coroutine that never suspends
(work on the reference device), where ``asyncio.run`` alone waits for its end."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

SPIN = """
import asyncio, sys
from scellis.base.interrupt import run_until_done

async def work():
    print("go", flush=True)
    total = 0
    while True:  # never suspends, as a generation on the reference device
        total += 1

{runner}(work())
"""


def _ctrl_c_after_start(runner: str):
    def default_ctrl_c():  # a terminal's Ctrl-C, whatever this process inherited
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen([sys.executable, "-c", SPIN.format(runner=runner)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=default_ctrl_c)  # fmt: skip
    assert p.stdout.readline() == b"go\n"
    time.sleep(0.5)  # inside the loop
    p.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        _, err = p.communicate(timeout=8)
        return err.decode(), time.monotonic() - sent
    except subprocess.TimeoutExpired:
        return None, None
    finally:
        p.kill()


def test_one_ctrl_c_stops_work_that_never_suspends():
    err, waited = _ctrl_c_after_start("run_until_done")
    assert err is not None, "still running after Ctrl-C"
    assert waited < 5 and err.rstrip().endswith("KeyboardInterrupt")


DURING_DEL = """
import asyncio, signal, sys
from scellis.base.interrupt import run_until_done

class Dying:
    def __del__(self):
        if self.last:  # the Ctrl-C arrives while a finaliser runs
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):
                pass

async def work():
    n = 0
    while True:  # never suspends; objects die all the time, as tensors do
        d = Dying()
        n += 1
        d.last = n == 1000
        del d

try:
    run_until_done(work())
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def test_a_ctrl_c_that_lands_in_a_finaliser_still_stops_the_work():
    p = subprocess.run([sys.executable, "-c", DURING_DEL], capture_output=True, timeout=20)
    assert p.stdout == b"stopped\n", p.stderr.decode()[-400:]


def test_finaliser_frames_are_told_apart():
    from scellis.base.interrupt import in_finaliser  # noqa: PLC0415

    seen = {}

    class Probe:
        def __del__(self):
            seen["del"] = in_finaliser(sys._getframe())

    Probe()
    assert seen == {"del": True} and not in_finaliser(sys._getframe())
