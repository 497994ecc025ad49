"""The tab's view of past runs (webapp layer): one run opened, two runs compared.

Both read what ``scellis runs show`` and ``scellis compare`` read (``run.past``): the
page draws them and does no arithmetic of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..base.errors import ScellisError
from ..run.past import comparison, curves_of, summary
from ..run.reference import open_run
from ..store.manifest import read_manifest
from ..store.objects import ObjectStore
from ..store.records import Records
from . import tab_store
from .commands import command

# the header lines an earlier import or reopening wrote: replaced by this run's own
_HEADER = re.compile(r"\A(?:#[^\n]*\n)*?#\s*weights:\s*sha256:[0-9a-f]{64}[ \t]*\n")


def _tab_summary(rec: Records, row: dict) -> dict:
    """``run.past.summary`` with the tab's reconciled status (a dead tab's run: interrupted)."""
    return {**summary(rec, row), "status": tab_store.status_of(row)}


@command(writes_store=False)
def run_view(run: str, store: str = tab_store.ROOT) -> dict:
    """Run ``run`` of ``store``: its summary, curves ({name: [[step, value], ...]}, by
    step) and record text (the record it trained: the run's edits applied)."""
    rec = Records(store)
    try:
        row = rec.run(rec.resolve(run))
        out = _tab_summary(rec, row)
        out["curves"] = curves_of(rec, row["id"])
    finally:
        rec.close()
    out["record"] = ObjectStore(Path(store)).get(row["record_hash"]).decode("utf-8", "replace")
    return out


@command(writes_store=False)
def compare_runs(a: str, b: str, store: str = tab_store.ROOT) -> dict:
    """Runs ``a`` and ``b`` side by side, as ``scellis compare`` has them (``run.past``)."""
    return comparison(store, (a, b), described=_tab_summary)


@command(writes_store=False)
def run_record(run: str, store: str = tab_store.ROOT) -> dict:
    """Run ``run``'s record with its trained weights, to edit and train further in Model
    View: ``{record, name, step}``. The record is the one the run trained (its edits
    applied); its header names the latest checkpoint's weights object, so a run of the
    record (a fine-tune) starts from them, as it does from an imported model's.
    A run that trained adapters (a ``finetune:`` section) keeps them beside a frozen
    base that the header cannot name: it is refused, with the way out."""
    trained = open_run(store, run)
    if trained.record.get("finetune"):
        raise ScellisError(
            f"run {trained.rid} trained adapters over a frozen base, which reopen only "
            "merged: export it (scellis export RUN --to safetensors) and import that file"
        )
    weights = read_manifest(ObjectStore(Path(store)), trained.manifest)["weights"]
    text = trained.record_text.decode("utf-8")
    text = _HEADER.sub("", text, count=1)
    header = (
        f"# reopened from run {trained.rid} at step {trained.step}: its trained weights\n"
        f"# weights: sha256:{weights}\n"
    )
    return {"record": header + text, "name": f"run {trained.rid}", "step": trained.step}
