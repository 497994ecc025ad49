"""Driving one coroutine from synchronous code (base layer), where Ctrl-C stops at once.

``asyncio.run``'s own Ctrl-C handler only cancels the task at its next suspension; work
that never suspends (every op on the reference device) runs on to its end, so a long
generation or prediction would ignore the first Ctrl-C. ``run_until_done`` raises
KeyboardInterrupt where the work is instead, as plain Python code would.
"""

from __future__ import annotations

import asyncio
import signal
import threading


def run_until_done(coro):
    """``asyncio.run(coro)``, where Ctrl-C raises KeyboardInterrupt at once (in the main
    thread; elsewhere signals do not arrive, so plain ``asyncio.run``)."""
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coro)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        return asyncio.run(coro)
    finally:
        signal.signal(signal.SIGINT, previous)
