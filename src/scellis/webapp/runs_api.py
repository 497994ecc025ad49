"""The tab's view of past runs (webapp layer): one run opened, two runs compared.

Both read what ``scellis runs show`` and ``scellis compare`` read (``run.past``): the
page draws them and does no arithmetic of its own.
"""

from __future__ import annotations

from pathlib import Path

from ..run.past import comparison, curves_of, summary
from ..store.objects import ObjectStore
from ..store.records import Records
from . import tab_store
from .commands import command


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
