"""Driving one coroutine from synchronous code (base layer), where Ctrl-C stops at once.

``asyncio.run``'s own Ctrl-C handler only cancels the task at its next suspension; work
that never suspends (every op on the reference device) runs on to its end, so a long
generation or prediction would ignore the first Ctrl-C. ``run_until_done`` raises
KeyboardInterrupt where the work is instead, as plain Python code would.

Except inside a finaliser: an exception raised in ``__del__`` (a tensor's buffer going
back to its pool) or in a weakref callback is printed and dropped, not propagated, so a
Ctrl-C landing there would be lost. There the handler sends the signal again a moment
later, when the work has most likely left the finaliser.
"""

from __future__ import annotations

import signal
import threading

RESEND_S = 0.005  # how long after a Ctrl-C that met a finaliser it is sent again


def in_finaliser(frame) -> bool:
    """Whether ``frame`` runs inside an object's finaliser (``__del__``, or a weakref
    callback such as ``weakref.finalize``'s), where an exception would be dropped."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith("weakref.py"):
            return True
        frame = frame.f_back
    return False


def raise_interrupt(signum, frame) -> None:
    """A signal handler's KeyboardInterrupt, or, inside a finaliser, the same signal sent
    again ``RESEND_S`` later."""
    if in_finaliser(frame):
        threading.Timer(RESEND_S, signal.raise_signal, (signum,)).start()
        return
    raise KeyboardInterrupt


def run_until_done(coro):
    """``asyncio.run(coro)``, where Ctrl-C raises KeyboardInterrupt at once (in the main
    thread; elsewhere signals do not arrive, so plain ``asyncio.run``)."""
    import asyncio  # here, not at the top: a command that runs nothing starts without it

    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coro)

    def interrupt(signum, frame):
        raise_interrupt(signum, frame)

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        return asyncio.run(coro)
    finally:
        signal.signal(signal.SIGINT, previous)
