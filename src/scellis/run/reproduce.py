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
from ..data.record import load_data
from ..sml import parse
from .effective import effective_record
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
        raw = pinned_text(self.shared).encode("utf-8")
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


def plain_source(shared: Shared) -> PurePosixPath | None:
    """Where the record reads its data file, relative to its folder (a link's record
    may name no other place); None when the data comes with scellis."""
    source = data_source(shared)
    if source is None:
        return None
    rel = PurePosixPath(source)
    if rel.is_absolute() or ".." in rel.parts or "\\" in source or not rel.parts:
        raise ScellisError(f"the link's record reads {source!r}, which is not a plain "
                           "relative file name")  # fmt: skip
    return rel


def place_data(shared: Shared, content: bytes | None, folder: Path) -> None:
    """Write the user's data file where the record looks for it in ``folder`` and check
    it is the link's dataset (its hash, with the record's data options), before any run."""
    rel = plain_source(shared)
    if rel is None:
        return
    if content is None:
        ds = (shared.dataset or "?")[:12]
        raise ScellisError(f"the link's run trained on {str(rel)!r} (dataset {ds}): give "
                           "that file with --data")  # fmt: skip
    target = folder / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    if shared.dataset is not None:
        load_data(parse(pinned_text(shared), LABEL).data["data"], folder)


def pinned_text(shared: Shared) -> str:
    """The link's record with its seed and its dataset's version (``data.sha256``)
    written in: other data (another file, another scellis's bundled one) is refused."""
    edits = [(("seed",), shared.seed, f"seed={shared.seed}")] if shared.seed is not None else []
    has_data = isinstance(parse(shared.record, LABEL).data.get("data"), dict)
    if shared.dataset is not None and has_data:
        edits.append((("data", "sha256"), shared.dataset, f"data.sha256={shared.dataset}"))
    return effective_record(shared.record.encode("utf-8"), LABEL, edits).decode("utf-8")


def run_options(shared: Shared) -> dict:
    """The run options a reproduction trains with: the link's, up to its last loss."""
    return {**shared.options, "max_steps": shared.steps}


def prepare(shared: Shared, data: str | None, folder: Path) -> Reproduction:
    """The reproduction of ``shared`` in ``folder``, with ``data`` (the user's file)."""
    place_data(shared, read_file(data) if data is not None else None, folder)
    options = RunOptions.from_mapping(run_options(shared), where="the link")
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
