"""Provenance records in SQLite (store layer): runs, checkpoints, metrics, datasets, models.

``ROOT/records.sqlite`` sits beside ``objects/``, in WAL mode so readers (``scellis
runs`` in another terminal) see a consistent snapshot while a run writes. Every
statement is parameterised; every multi-row change is one transaction, so a reader
never sees a checkpoint without the metrics of the steps before it. The schema is
versioned with ``PRAGMA user_version``; an unknown (newer) version is refused.

A run is ``interrupted`` when its status says running but its process is gone: it ran
on this host and its pid is dead, or it ran elsewhere and its heartbeat is older than
``stale_s``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import time
import urllib.parse
import uuid
from pathlib import Path

from ..base.errors import ScellisError, shown

SCHEMA_VERSION = 1
# what a run id (or its prefix) may look like: ids are 22 characters of these
_RUN_PREFIX = re.compile(r"[A-Za-z0-9_.-]{1,64}")
STALE_S = 60.0

_SCHEMA = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    record_hash TEXT NOT NULL,
    model_id TEXT,
    dataset_hash TEXT,
    device TEXT,
    adapter TEXT,
    tier TEXT,
    seed INTEGER,
    status TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    heartbeat REAL,
    host TEXT,
    pid INTEGER,
    argv TEXT,
    config TEXT,
    step INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE checkpoints (
    run_id TEXT NOT NULL REFERENCES runs(id),
    step INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    batch INTEGER NOT NULL,
    manifest TEXT NOT NULL,
    loss REAL,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, step)
);
CREATE TABLE metrics (
    run_id TEXT NOT NULL REFERENCES runs(id),
    step INTEGER NOT NULL,
    epoch INTEGER,
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (run_id, step, name)
);
CREATE TABLE datasets (
    hash TEXT PRIMARY KEY,
    source TEXT,
    rows INTEGER,
    created REAL NOT NULL
);
CREATE TABLE models (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    object TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (name, version)
);
"""


# each table's columns, as the schema above names them
_COLUMNS = {
    "runs": ("id", "record_hash", "model_id", "dataset_hash", "device", "adapter", "tier",
             "seed", "status", "started", "ended", "heartbeat", "host", "pid", "argv",
             "config", "step"),
    "checkpoints": ("run_id", "step", "epoch", "batch", "manifest", "loss", "created"),
    "metrics": ("run_id", "step", "epoch", "name", "value"),
    "datasets": ("hash", "source", "rows", "created"),
}  # fmt: skip

# PRAGMA takes no parameters: the statement is a constant per version
_SET_VERSION = {1: "PRAGMA user_version=1"}


class Records:
    def __init__(self, root: str | os.PathLike, *, stale_s: float = STALE_S,
                 readonly: bool = False):  # fmt: skip
        """The store's records; ``readonly`` for a command that only reads: a store the
        user may not write to (a shared or archived folder) is then read as it is."""
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ScellisError(f"{self.root} is a file, not a store folder")
        self.path = self.root / "records.sqlite"
        self.stale_s = stale_s
        if readonly and not self.path.is_file():
            raise ScellisError(f"no store at {self.root} (its records.sqlite is missing)")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ScellisError(f"cannot create the store {self.root}: {e.strerror or e}") from None
        _not_emptied(self.path, self.root)
        try:
            self._open()
        except (sqlite3.Error, ScellisError) as e:
            if not readonly:
                if isinstance(e, ScellisError):
                    raise
                raise ScellisError(f"{self.path}: not a usable records database ({e})") from None
            self._open_readonly(e)

    def _open(self) -> None:
        # autocommit: transactions are explicit (``with self._tx()``)
        self.db = _Conn(sqlite3.connect(self.path, timeout=30.0, isolation_level=None),
                        self.path)  # fmt: skip
        self.db.row_factory = sqlite3.Row
        # WAL where the host supports it (a browser file system may not: then the
        # default rollback journal still gives atomic transactions)
        self.db.execute("PRAGMA journal_mode=WAL")
        # in WAL mode NORMAL still commits atomically; it skips an fsync per commit
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self._migrate()

    def _open_readonly(self, first: Exception) -> None:
        """Open for reading where the normal open failed. WAL needs to write its -shm
        file beside the database: ``mode=ro`` reads where that file can still be made or
        opened; ``immutable=1`` reads a folder no one can write (nor change meanwhile)."""
        if getattr(self, "db", None) is not None:
            self.db.close()
        uri = "file:" + urllib.parse.quote(str(self.path.resolve()))
        for flags in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                db = _Conn(sqlite3.connect(uri + flags, uri=True, timeout=30.0,
                                           isolation_level=None), self.path)  # fmt: skip
            except sqlite3.Error:
                continue
            db.row_factory = sqlite3.Row
            try:
                version = db.execute("PRAGMA user_version").fetchone()[0]
                db.execute("SELECT 1 FROM runs LIMIT 1").fetchall()
            except ScellisError:
                db.close()
                continue
            if version != SCHEMA_VERSION:
                db.close()
                raise ScellisError(
                    f"{self.path} has schema version {version}; this scellis reads {SCHEMA_VERSION}"
                )
            self.db = db
            return
        if isinstance(first, ScellisError):
            raise first
        raise ScellisError(f"{self.path}: not a usable records database ({first})") from None

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        if self.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return  # the common case: no write lock needed just to open the store
        with self._tx():
            v = self.db.execute("PRAGMA user_version").fetchone()[0]
            if v == 0:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
                self.db.execute(_SET_VERSION[SCHEMA_VERSION])
            elif v != SCHEMA_VERSION:
                raise ScellisError(
                    f"{self.path} has schema version {v}; this scellis reads {SCHEMA_VERSION}"
                )

    def _tx(self):
        return _Tx(self.db, "BEGIN IMMEDIATE")

    def snapshot(self):
        """A read transaction: every query inside sees the same committed state."""
        return _Tx(self.db, "BEGIN")

    # -- runs --
    def new_run(self, *, record_hash: str, model_id, dataset_hash, device, adapter, tier,
                seed, argv: list[str], config: dict) -> str:  # fmt: skip
        now = time.time()
        rid = new_run_id(now)
        with self._tx():
            self.db.execute(
                "INSERT INTO runs (id, record_hash, model_id, dataset_hash, device, adapter,"
                " tier, seed, status, started, heartbeat, host, pid, argv, config)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?)",
                (rid, record_hash, model_id, dataset_hash, device, adapter, tier, seed, now,
                 now, _host(), os.getpid(), json.dumps(argv),
                 json.dumps(config, sort_keys=True)),
            )  # fmt: skip
        return rid

    def reopen_run(self, rid: str, *, device: str, adapter: str, tier: str, step: int) -> None:
        """Mark ``rid`` running again from checkpoint ``step``: later metrics and
        checkpoints are dropped (the resumed run replays those steps)."""
        now = time.time()
        with self._tx():
            self.db.execute(
                "UPDATE runs SET status='running', ended=NULL, heartbeat=?, host=?, pid=?,"
                " device=?, adapter=?, tier=?, step=? WHERE id=?",
                (now, _host(), os.getpid(), device, adapter, tier, step, rid),
            )
            self.db.execute("DELETE FROM metrics WHERE run_id=? AND step>?", (rid, step))
            # later checkpoints were unusable (the latest usable one is resumed): the
            # replayed steps write their own
            self.db.execute("DELETE FROM checkpoints WHERE run_id=? AND step>?", (rid, step))

    def set_options(self, rid: str, options: dict) -> None:
        """Run ``rid``'s stored run options become ``options`` (a resume that changed one,
        a larger ``max_steps``, makes it the run's own for the list and the next resume)."""
        with self._tx():
            row = self.db.execute("SELECT config FROM runs WHERE id=?", (rid,)).fetchone()
            config = {**json.loads(row[0] or "{}"), "options": options} if row else None
            if config is not None:
                self.db.execute(
                    "UPDATE runs SET config=? WHERE id=?",
                    (json.dumps(config, sort_keys=True), rid),
                )

    def branch_run(self, rid: str, step: int, *, device: str, adapter: str, tier: str) -> str:
        """A new running run that is ``rid`` up to ``step``: the same record, data and
        options, with ``parent`` (``{"run", "step"}``) in its config, and copies of the
        metrics and checkpoint rows up to ``step`` (the checkpoint objects are shared:
        content-addressed). ``rid``'s later history stays as it is."""
        parent = self.run(rid)
        config = {**parent["config"], "parent": {"run": rid, "step": int(step)}}
        new = self.new_run(
            record_hash=parent["record_hash"], model_id=parent["model_id"],
            dataset_hash=parent["dataset_hash"], device=device, adapter=adapter, tier=tier,
            seed=parent["seed"], argv=parent["argv"], config=config,
        )  # fmt: skip
        with self._tx():
            for table, cols in (("metrics", _COLUMNS["metrics"][1:]),
                                ("checkpoints", _COLUMNS["checkpoints"][1:])):  # fmt: skip
                names = ", ".join(cols)  # from the fixed schema list
                self.db.execute(
                    f"INSERT INTO {table} (run_id, {names}) SELECT ?, {names} FROM {table}"
                    " WHERE run_id=? AND step<=?",
                    (new, rid, step),
                )
            self.db.execute("UPDATE runs SET step=? WHERE id=?", (step, new))
        return new

    def rows_of(self, rid: str) -> dict:
        """The raw rows of run ``rid`` (runs, checkpoints, metrics, its dataset): what a
        run bundle carries."""
        with self.snapshot():
            run = self.db.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
            if run is None:
                raise ScellisError(f"no run {rid!r} in {self.root}")
            q = "SELECT * FROM {} WHERE run_id=? ORDER BY step"
            cks = self.db.execute(q.format("checkpoints"), (rid,)).fetchall()
            mets = self.db.execute(q.format("metrics"), (rid,)).fetchall()
            ds = self.db.execute("SELECT * FROM datasets WHERE hash=?", (run["dataset_hash"],))
            ds = ds.fetchall()
        return {
            "run": dict(run),
            "checkpoints": [dict(r) for r in cks],
            "metrics": [dict(r) for r in mets],
            "datasets": [dict(r) for r in ds],
        }

    def has_run(self, rid: str) -> bool:
        return self.db.execute("SELECT 1 FROM runs WHERE id=?", (rid,)).fetchone() is not None

    def add_rows(self, rows: dict) -> None:
        """Insert a bundle's rows (``rows_of``'s shape) in one transaction. A run that
        was running where it came from is ``interrupted`` here: its process is not."""
        run = dict(rows["run"])
        if run["status"] == "running":
            run["status"] = "interrupted"
        with self._tx():
            if self.db.execute("SELECT 1 FROM runs WHERE id=?", (run["id"],)).fetchone():
                raise ScellisError(f"run {run['id']} is already in {self.root}")
            for table, items in (("datasets", rows.get("datasets", [])), ("runs", [run]),
                                 ("checkpoints", rows["checkpoints"]),
                                 ("metrics", rows["metrics"])):  # fmt: skip
                for item in items:
                    cols = [c for c in item if c in _COLUMNS[table]]
                    verb = "INSERT OR IGNORE" if table == "datasets" else "INSERT"
                    # column names come from the fixed schema list, never from the bundle
                    self.db.execute(
                        f"{verb} INTO {table} ({', '.join(cols)})"
                        f" VALUES ({', '.join('?' * len(cols))})",
                        [item[c] for c in cols],
                    )

    def heartbeat(self, rid: str) -> None:
        with self._tx():
            self.db.execute("UPDATE runs SET heartbeat=? WHERE id=?", (time.time(), rid))

    def finish(self, rid: str, status: str) -> None:
        now = time.time()
        with self._tx():
            self.db.execute(
                "UPDATE runs SET status=?, ended=?, heartbeat=? WHERE id=?", (status, now, now, rid)
            )

    def log(self, rid: str, step: int, epoch: int, values: dict) -> None:
        """Metrics of one step, and the run's step counter, in one transaction."""
        with self._tx():
            self.db.executemany(
                "INSERT OR REPLACE INTO metrics (run_id, step, epoch, name, value)"
                " VALUES (?, ?, ?, ?, ?)",
                [(rid, step, epoch, k, _num(v)) for k, v in values.items()],
            )
            self.db.execute(
                "UPDATE runs SET step=?, heartbeat=? WHERE id=?", (step, time.time(), rid)
            )

    def resolve(self, ref: str) -> str:
        """A run id from a full id or a unique prefix (or ``last``)."""
        if not isinstance(ref, str) or not _RUN_PREFIX.fullmatch(ref):
            raise ScellisError(f"{shown(str(ref), 60)!r} is not a run id (`scellis runs` lists "
                               "them)")  # fmt: skip
        if ref == "last":
            row = self.db.execute("SELECT id FROM runs ORDER BY started DESC LIMIT 1").fetchone()
            if row is None:
                raise ScellisError(f"no runs in {self.root}")
            return row["id"]
        rows = self.db.execute(
            "SELECT id FROM runs WHERE id=? OR id LIKE ? ESCAPE '\\'",
            (ref, ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"),
        ).fetchall()
        ids = sorted({r["id"] for r in rows})
        if ref in ids:
            return ref
        if not ids:
            raise ScellisError(f"no run {ref!r} in {self.root} (`scellis runs` lists them)")
        if len(ids) > 1:
            raise ScellisError(f"run {ref!r} is ambiguous: {', '.join(ids[:5])}")
        return ids[0]

    def run(self, rid: str) -> dict:
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
        if row is None:
            raise ScellisError(f"no run {rid!r} in {self.root}")
        return self._run_view(row)

    def runs(self, query=None) -> list[dict]:
        """Every run, oldest first; with ``query`` (a ``store.query.RunQuery``) the runs
        it selects, each with ``matched``: ``{label: value}`` of the metric values its
        condition read."""
        if query is None:
            rows = self.db.execute("SELECT * FROM runs ORDER BY started").fetchall()
            return [self._run_view(r) for r in rows]
        # the query's SQL is built from its constants; what the user typed is parameters
        cols, col_params, clause, params = query.sql()
        rows = self.db.execute(
            f"SELECT runs.*{', ' + cols if cols else ''} FROM runs WHERE {clause} ORDER BY started",
            (*col_params, *params),
        ).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            matched = {v.label: d.pop(f"q{i}") for i, v in enumerate(query.values)}
            out.append({**self._run_view(d), "matched": matched})
        return out

    def _run_view(self, row) -> dict:
        d = dict(row)
        try:
            d["argv"] = json.loads(d["argv"] or "[]")
            d["config"] = json.loads(d["config"] or "{}")
            ok = isinstance(d["argv"], list) and isinstance(d["config"], dict)
            d["status"] = self.reconciled_status(d) if ok else None
        except (TypeError, ValueError, RecursionError, OverflowError):
            ok = False
        if not ok:
            raise ScellisError(
                f"{self.path}: the row of run {d.get('id')!r:.80} is damaged (its argv, config "
                "or times are not what the store writes)"
            )
        return d

    def reconciled_status(self, d: dict) -> str:
        if d["status"] != "running":
            return d["status"]
        if d["host"] and d["host"] == _host() and d["pid"]:
            # on this host the process table is the truth: a slow step is not a dead run
            return "running" if _alive(d["pid"]) else "interrupted"
        if time.time() - (d["heartbeat"] or 0) > self.stale_s:
            return "interrupted"
        return "running"

    # -- checkpoints --
    def add_checkpoint(self, rid, step, epoch, batch, manifest: str, loss) -> None:
        with self._tx():
            self.db.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, step, epoch, batch, manifest, loss,"
                " created) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (rid, step, epoch, batch, manifest, _num(loss), time.time()),
            )
            self.db.execute("UPDATE runs SET heartbeat=? WHERE id=?", (time.time(), rid))

    def checkpoints(self, rid: str) -> list[dict]:
        rows = self.db.execute(
            "SELECT * FROM checkpoints WHERE run_id=? ORDER BY step", (rid,)
        ).fetchall()
        return [dict(r) for r in rows]

    def drop_checkpoints(self, rid: str, steps: list[int]) -> None:
        with self._tx():
            self.db.executemany(
                "DELETE FROM checkpoints WHERE run_id=? AND step=?", [(rid, s) for s in steps]
            )

    def metric_names(self, rid: str) -> list[str]:
        """The names of every metric the run recorded, sorted."""
        rows = self.db.execute(
            "SELECT DISTINCT name FROM metrics WHERE run_id=? ORDER BY name", (rid,)
        ).fetchall()
        return [r[0] for r in rows]

    def metrics(self, rid: str, name: str = "loss") -> list[tuple[int, float]]:
        rows = self.db.execute(
            "SELECT step, value FROM metrics WHERE run_id=? AND name=? ORDER BY step", (rid, name)
        ).fetchall()
        return [(r["step"], r["value"]) for r in rows]

    # -- datasets and models --
    def add_dataset(self, h: str, source: str, rows: int) -> None:
        with self._tx():
            self.db.execute(
                "INSERT OR IGNORE INTO datasets (hash, source, rows, created) VALUES (?, ?, ?, ?)",
                (h, source, rows, time.time()),
            )

    def next_version(self, name: str) -> int:
        row = self.db.execute("SELECT MAX(version) AS v FROM models WHERE name=?", (name,))
        return (row.fetchone()["v"] or 0) + 1

    def add_model(self, name: str, version: int, obj: str) -> bool:
        """Record version ``version`` of model ``name`` (namespace/name) as object ``obj``;
        False when another writer took that version first."""
        try:
            with self._tx():
                self.db.execute(
                    "INSERT INTO models (name, version, object, created) VALUES (?, ?, ?, ?)",
                    (name, version, obj, time.time()),
                )
        except RecordsConflict:
            return False
        return True

    def model(self, name: str, version: int) -> str | None:
        row = self.db.execute(
            "SELECT object FROM models WHERE name=? AND version=?", (name, version)
        ).fetchone()
        return row["object"] if row else None

    def models(self) -> list[dict]:
        rows = self.db.execute("SELECT * FROM models ORDER BY name, version").fetchall()
        return [dict(r) for r in rows]

    def referenced(self) -> set[str]:
        """Every object hash a row names directly (manifests name the rest)."""
        with self.snapshot():
            out = {r[0] for r in self.db.execute("SELECT manifest FROM checkpoints")}
            out |= {r[0] for r in self.db.execute("SELECT record_hash FROM runs")}
            out |= {r[0] for r in self.db.execute("SELECT object FROM models")}
            # a run's data files (store.runfiles), listed in its config
            for (cfg,) in self.db.execute("SELECT config FROM runs"):
                out |= set((json.loads(cfg or "{}").get("files") or {}).values())
        return out


def new_run_id(now: float) -> str:
    """A fresh run id: the UTC start time and six random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + "-" + uuid.uuid4().hex[:6]


def _not_emptied(path: Path, root: Path) -> None:
    """A records file of 0 bytes beside stored objects lost its rows (SQLite would read it
    as a new, empty store and say there are no runs): refused, naming the file."""
    try:
        if path.stat().st_size != 0:
            return
    except OSError:
        return  # none yet: a new store
    objects = root / "objects" / "sha256"
    if objects.is_dir() and any(p.is_dir() and any(p.iterdir()) for p in objects.iterdir()):
        raise ScellisError(
            f"{path} is empty (0 bytes) but the store holds objects: the records file was "
            "damaged or truncated; restore it, or move it aside to start a new record"
        )


class _Conn:
    """The SQLite connection with every failure (a damaged page, a full disk, a file
    that is no database) raised as a ScellisError naming the records file, whether it
    happens on execute or while rows are fetched."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        object.__setattr__(self, "_conn", conn)
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name):
        return getattr(self._conn, name)

    def __setattr__(self, name, value):
        setattr(self._conn, name, value)

    def execute(self, *args):
        try:
            return _Cursor(self._conn.execute(*args), self._path)
        except sqlite3.Error as e:
            raise _error(e, self._path) from None

    def executemany(self, *args):
        try:
            return _Cursor(self._conn.executemany(*args), self._path)
        except sqlite3.Error as e:
            raise _error(e, self._path) from None


class _Cursor:
    def __init__(self, cur: sqlite3.Cursor, path: Path):
        self._cur, self._path = cur, path

    def _call(self, fn):
        try:
            return fn()
        except sqlite3.Error as e:
            raise _error(e, self._path) from None

    def fetchone(self):
        return self._call(self._cur.fetchone)

    def fetchall(self):
        return self._call(self._cur.fetchall)

    def __iter__(self):
        return iter(self.fetchall())


class _Tx:
    """BEGIN ... COMMIT (or ROLLBACK on error) on an autocommit connection. SQLite's own
    failures (a full disk, a locked or damaged file) leave as ScellisErrors."""

    def __init__(self, db, begin: str):
        self.db, self.begin = db, begin

    def __enter__(self):
        self.db.execute(self.begin)
        return self.db

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
                return False
            except ScellisError as e:
                exc = e
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except ScellisError:
                pass  # SQLite rolled back already (it does on a full disk)
        if exc_type is None:
            raise exc
        return False


def _error(e: sqlite3.Error, path: Path) -> ScellisError:
    if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "full" in str(e):
        return RecordsFullError(
            f"the disk under the records database is full ({e}); free space and resume"
        )
    if isinstance(e, sqlite3.IntegrityError):
        return RecordsConflict(f"{path}: a row conflicts with the records ({e})")
    if isinstance(e, (sqlite3.DatabaseError, sqlite3.OperationalError)):
        return ScellisError(f"{path}: the records file cannot be read ({e})")
    return ScellisError(f"{path}: {e}")


class RecordsConflict(ScellisError):
    """A row the records' keys or constraints refuse (a version or run taken already)."""


class RecordsFullError(ScellisError):
    """The records database could not grow: the disk is full."""


def _num(v):
    if v is None or isinstance(v, (int, float)):
        return v
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _host() -> str:
    try:
        return socket.gethostname()
    except OSError:  # a sandbox without a host name (the browser): pids cannot be checked
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True
