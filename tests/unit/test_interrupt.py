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
