"""A shared run reproduced (run layer): ``scellis reproduce LINK --data FILE`` and
``scellis.reproduce``; the tab's opened link drives the same session.

The link's record trains with its seed and tier for as many steps as the link has
losses, on data whose hash must be the link's (the record is run with ``data.sha256``
pinned to it, so another file is refused before anything trains). The answer says
whether every expected loss came back bit for bit; the run is recorded like any other.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..base.errors import ScellisError
from ..base.files import read_file
from ..sml import parse
from .options import RunOptions
from .session import RunSession, start_run
from .share import Shared, match_of, read_link

LABEL = "shared.sml"


@dataclass
class Reproduction:
    """What reproducing needs: where the record and its data file lie, how to run it."""

    shared: Shared
    folder: Path  # the record's base_dir: its data file is copied in under the record's name
    options: RunOptions

    def start(self, *, device: str, store) -> RunSession:
        raw = self.shared.record.encode("utf-8")
        return start_run(raw, LABEL, options=self.options, device=device, base_dir=self.folder,
                         store=store, tier=self.shared.tier,
                         argv=("scellis", "reproduce", f"(run {self.shared.run})"))  # fmt: skip


def data_source(shared: Shared) -> str | None:
    """The file the record reads its data from, or None when it comes with scellis
    (``bundled:NAME``) or the record has no data section."""
    data = parse(shared.record, LABEL).data.get("data")
    source = data.get("source") if isinstance(data, dict) else None
    if not isinstance(source, str) or source.startswith("bundled:"):
        return None
    return source


def prepare(shared: Shared, data: str | None, folder: Path) -> Reproduction:
    """The reproduction of ``shared`` in ``folder``: ``data`` (the user's file) is copied
    to where the record looks for it; the dataset hash, seed and steps are pinned."""
    source = data_source(shared)
    if source is not None:
        rel = PurePosixPath(source)
        if rel.is_absolute() or ".." in rel.parts or "\\" in source:
            raise ScellisError(f"the link's record reads {source!r}, which is not a plain "
                               "relative file name")  # fmt: skip
        if data is None:
            ds = (shared.dataset or "?")[:12]
            raise ScellisError(f"the link's run trained on {source!r} (dataset {ds}): give "
                               "that file with --data")  # fmt: skip
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read_file(data))
    pins = [f"data.sha256={shared.dataset}"] if shared.dataset and source is not None else []
    options = RunOptions.from_mapping(
        {**shared.options, "max_steps": shared.steps, "set": pins,
         **({"seed": shared.seed} if shared.seed is not None else {})},
        where="the link",
    )  # fmt: skip
    return Reproduction(shared, folder, options)


async def losses_of(session: RunSession) -> dict[int, float]:
    """Drive ``session`` to its end; the loss of every logged step."""
    got = {}
    async for ev in session.events():
        if ev.kind == "log":
            got[ev.step] = ev.loss
    return got


def reproduce(link: str | Shared, data: str | None = None, *, store=".scellis",
              device: str = "reference") -> dict:  # fmt: skip
    """Reproduce the run a link names, on ``data`` (its file, unless bundled), recorded in
    ``store``; returns ``match_of``'s answer with the new ``run`` and the link's ``tier``."""
    shared = read_link(link) if isinstance(link, str) else link
    folder = Path(tempfile.mkdtemp(prefix="scellis-repro-"))
    try:
        session = prepare(shared, data, folder).start(device=device, store=store)
        got = asyncio.run(losses_of(session))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {**match_of(shared.losses, got), "run": session.rid, "of": shared.run,
            "tier": shared.tier, "device": device}  # fmt: skip
