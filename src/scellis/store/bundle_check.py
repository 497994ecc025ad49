"""What a run bundle may hold (store layer): every row and object checked before any write.

A bundle comes from elsewhere (another machine, a tab's download, a stranger). Its
``run.json`` is parsed with bounded numbers and nesting, and every row is checked
against the columns the records hold: known columns only, each of its type (text,
a whole number within 63 bits, a number), the keys that tie rows together (one run id
throughout, sha256 hashes, no step twice), the run's config and argv as the JSON the
store writes. Nothing is written until all of it passed.
"""

from __future__ import annotations

import math
import re

from ..base.errors import ScellisError
from ..base.jsontext import load_json

MAX_INT = 2**63 - 1
STATUSES = ("running", "done", "interrupted", "failed")
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}$")
HEX = re.compile(r"[0-9a-f]{64}$")

# column -> (kind, required); kinds: text, int, num, hash, json
TABLES = {
    "runs": {
        "id": ("id", True), "record_hash": ("hash", True), "model_id": ("text", False),
        "dataset_hash": ("text", False), "device": ("text", False), "adapter": ("text", False),
        "tier": ("text", False), "seed": ("int", False), "status": ("status", True),
        "started": ("num", True), "ended": ("num", False), "heartbeat": ("num", False),
        "host": ("text", False), "pid": ("int", False), "argv": ("argv", False),
        "config": ("config", False), "step": ("int", True),
    },
    "checkpoints": {
        "run_id": ("id", True), "step": ("int", True), "epoch": ("int", True),
        "batch": ("int", True), "manifest": ("hash", True), "loss": ("num", False),
        "created": ("num", True),
    },
    "metrics": {
        "run_id": ("id", True), "step": ("int", True), "epoch": ("int", False),
        "name": ("text", True), "value": ("num", False),
    },
    "datasets": {
        "hash": ("text", True), "source": ("text", False), "rows": ("int", False),
        "created": ("num", True),
    },
}  # fmt: skip


class BundleError(ScellisError):
    """A run bundle that is not what ``export_run`` writes."""

    def __init__(self, message: str):
        super().__init__(f"run bundle: {message}")


def parse(data: bytes):
    """run.json's value: JSON with numbers that fit in 63 bits and bounded nesting."""
    try:
        return load_json(data, "run.json", max_digits=19)
    except ScellisError as e:
        raise BundleError(str(e)) from None


def _json_text(v, want: type, what: str):
    if not isinstance(v, str):
        raise BundleError(f"the run's {what} is {type(v).__name__}, not JSON text")
    try:
        got = parse(v.encode("utf-8", "surrogatepass"))
    except BundleError:
        raise BundleError(f"the run's {what} is not JSON") from None
    if not isinstance(got, want):
        raise BundleError(f"the run's {what} is not a JSON {want.__name__}")
    return got


def _printable(v, where: str) -> None:
    """Refuse text holding control characters anywhere in ``v`` (JSON: keys too). The
    store's listings print a run's text as it is: an escape sequence from a stranger's
    bundle would reach the user's terminal (retitle it, clear it, write the clipboard)."""
    todo = [v]
    while todo:
        x = todo.pop()
        if isinstance(x, str) and not x.isprintable():
            raise BundleError(f"{where} {x!r:.80} holds control characters")
        if isinstance(x, dict):
            todo.extend(x)
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)


def _cell(table: str, col: str, kind: str, v) -> None:
    where = f"{table}.{col}"
    if kind in ("text", "id", "status", "hash") and not isinstance(v, str):
        raise BundleError(f"{where} is {type(v).__name__} {v!r:.40}, not text")
    if kind == "text":
        _printable(v, where)
    if kind == "id" and not RUN_ID.match(v):
        raise BundleError(f"{where} {v!r:.80} is not a run id")
    if kind == "hash" and not HEX.match(v):
        raise BundleError(f"{where} {v!r:.80} is not a sha256 hash")
    if kind == "status" and v not in STATUSES:
        raise BundleError(f"{where} {v!r:.40} is not one of {', '.join(STATUSES)}")
    if kind == "int" and (type(v) is not int or not 0 <= v <= MAX_INT):
        raise BundleError(f"{where} is {v!r:.40}, not a whole number >= 0")
    if kind == "num":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise BundleError(f"{where} is {type(v).__name__} {v!r:.40}, not a number")
        if type(v) is int and abs(v) > MAX_INT:
            raise BundleError(f"{where} is {v!r:.40}, over 63 bits")
        if col in ("started", "ended", "heartbeat", "created") and not math.isfinite(v):
            raise BundleError(f"{where} is {v!r}, not a time")
    if kind == "argv":
        argv = _json_text(v, list, "argv")
        if not all(isinstance(a, str) for a in argv):
            raise BundleError("the run's argv holds something other than text")
        _printable(argv, "the run's argv")
    if kind == "config":
        _printable(_json_text(v, dict, "config"), "the run's config")


def _rows(rows, table: str) -> list:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise BundleError(f"{table} is not a list of rows")
    cols = TABLES[table]
    for r in rows:
        for k, v in r.items():
            if k not in cols:
                raise BundleError(f"{table} has an unknown column {k!r:.40}")
            if v is not None:
                _cell(table, k, cols[k][0], v)
        missing = [k for k, (_, req) in cols.items() if req and r.get(k) is None]
        if missing:
            raise BundleError(f"a {table} row lacks {', '.join(missing)}")
    return rows


def check_rows(rows, fmt: str) -> dict:
    """The bundle's rows, checked: ``{format, run, checkpoints, metrics, datasets}``."""
    if not isinstance(rows, dict):
        raise BundleError(f"run.json is a {type(rows).__name__}, not an object")
    if rows.get("format") != fmt:
        raise BundleError(f"format {rows.get('format')!r:.80}; this reads {fmt}")
    extra = set(rows) - {"format", "run", "checkpoints", "metrics", "datasets"}
    if extra:
        raise BundleError(f"run.json has unknown entries {sorted(extra)!r:.80}")
    (run,) = _rows([rows.get("run")] if isinstance(rows.get("run"), dict) else None, "runs")
    checkpoints = _rows(rows.get("checkpoints", []), "checkpoints")
    metrics = _rows(rows.get("metrics", []), "metrics")
    datasets = _rows(rows.get("datasets", []), "datasets")
    rid = run["id"]
    for table, items in (("checkpoints", checkpoints), ("metrics", metrics)):
        if any(r["run_id"] != rid for r in items):
            raise BundleError(f"{table} rows name a run other than {rid}")
    for table, items, key in (("checkpoints", checkpoints, ("step",)),
                              ("metrics", metrics, ("step", "name")),
                              ("datasets", datasets, ("hash",))):  # fmt: skip
        keys = [tuple(r[k] for k in key) for r in items]
        if len(set(keys)) != len(keys):
            raise BundleError(f"{table} rows repeat a {'/'.join(key)}")
    return {"format": fmt, "run": run, "checkpoints": checkpoints, "metrics": metrics,
            "datasets": datasets}  # fmt: skip
