"""Who stepped (catalog layer): optimizers (and, through them, schedulers) note
their ``step()`` here.

A compiled step (``train.compiled``) replays a user's function without running its
Python, so it must know what host state that Python advanced: the optimizers whose
step counts and rates it re-encodes, and any scheduler stepped inside (refused: its
rate would silently stop changing). A rate edited by hand inside the step is seen by
comparing the rates around the call.
"""

from __future__ import annotations

import contextlib

_watchers: list[list] = []


def noted(obj) -> None:
    """``obj`` (an optimizer or a scheduler) stepped."""
    for w in _watchers:
        if not any(o is obj for o in w):
            w.append(obj)


@contextlib.contextmanager
def watching():
    """The optimizers and schedulers stepped inside the block, in first-step order."""
    seen: list = []
    _watchers.append(seen)
    try:
        yield seen
    finally:
        _watchers.remove(seen)
