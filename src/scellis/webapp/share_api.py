"""Run links in the tab (webapp layer): the runs list's "copy link" and a link opened in
the tab, through the same ``run.share`` / ``run.reproduce`` as ``scellis share`` and
``scellis reproduce``.

Opening a link: ``open_link`` says what it holds and the record to train (its seed and
data version written in); ``link_data`` writes the data file the user picked where that
record reads it (the worker's working folder, as the data panel's files) and checks its
hash; the page trains the record with ``link_options`` on the link's tier; ``link_match``
compares the losses it saw with the link's.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

from ..base.errors import ScellisError
from ..run.reproduce import pinned_text, place_data, plain_source, run_options
from ..run.share import DEFAULT_STEPS, link_of, match_of, read_link, shared_of
from . import tab_store
from .commands import command

MAX_DATA = 64 * 2**20  # a picked data file, as base64 through the worker's message


@command(writes_store=False)
def share_link(run: str, site: str, store: str = tab_store.ROOT,
               steps: int = DEFAULT_STEPS) -> str:  # fmt: skip
    """The link that reproduces run ``run`` of the tab's store, opening ``site``."""
    return link_of(shared_of(store, run, steps), site)


@command(writes_store=False)
def open_link(link: str) -> dict:
    """What a link holds, as the page shows it before reproducing: the record to train
    (``record_text``), its ``tier``, the run ``options``, the data ``file`` to ask for
    (None when bundled), and the expected ``losses``."""
    shared = read_link(link)
    source = plain_source(shared)
    return {
        "record_text": pinned_text(shared), "tier": shared.tier, "seed": shared.seed,
        "dataset": shared.dataset, "file": str(source) if source is not None else None,
        "options": run_options(shared), "losses": [[s, v] for s, v in shared.losses],
        "run": shared.run, "device": shared.device,
    }  # fmt: skip


@command(writes_store=False)
def link_data(link: str, data: str, folder: str = ".") -> dict:
    """Write the picked file (``data``: base64) where the link's record reads it, under
    ``folder`` (the worker's working folder), and check it is the link's dataset."""
    if not isinstance(data, str) or len(data) > MAX_DATA * 4 // 3 + 4:
        raise ScellisError(f"the data file is over {MAX_DATA // 2**20} MiB")
    try:
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ScellisError("the data file did not arrive whole (bad base64)") from None
    shared = read_link(link)
    place_data(shared, content, Path(folder))
    return {"file": str(plain_source(shared)), "dataset": shared.dataset, "bytes": len(content)}


@command(writes_store=False)
def link_match(link: str, losses: list) -> dict:
    """The page's losses (``[[step, loss], ...]`` from the run's log events) against the
    link's: ``bitwise``, ``first_difference``, ``max_relative_difference``."""
    if not isinstance(losses, list) or not all(
        isinstance(x, list) and len(x) == 2 and isinstance(x[0], int) for x in losses
    ):
        raise ScellisError("losses are [step, loss] pairs")
    shared = read_link(link)
    got = {s: float(v) for s, v in losses if isinstance(v, (int, float))}
    return {**match_of(shared.losses, got), "tier": shared.tier, "device": shared.device}
