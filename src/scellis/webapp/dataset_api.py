"""The data panel's worker entry points (webapp layer): a dropped file to a hashed dataset.

``load_table`` / ``load_text`` describe a file the user picked (columns, which ones are
numeric or datetime, a preview and a plot series) without touching the record.
``dataset_from`` saves the file under ``folder`` (the worker's file system in a tab),
points the record's ``data`` section at it (a newly dropped CSV with the normalisation
its trend test picks, and why, where the record names none) and writes its version, ``sha256``: the
digest ``scellis.data`` computes natively for the same file and options (the very same
functions, so a run in the tab and ``scellis train`` agree on the dataset's identity).
"""

from __future__ import annotations

import csv
import io
import math
import re
import tempfile
from pathlib import Path

from ..base.errors import ScellisError
from ..base.files import read_file
from ..data.advice import advise
from ..data.csvsource import CSVConfig, dataset_digest, load_csv
from ..data.frequency import frequency
from ..data.record import CSV_KEYS, TEXT_KEYS, csv_config, source_path
from ..data.table import MISSING, parse_time, read_table
from ..data.text import read_text, text_dataset
from ..run.effective import follow_data
from ..sml import Document, parse

PREVIEW_ROWS = 8
OWN_DATA_CAP = 16 << 20  # a record's own file previewed in full: bigger ones are not shown
PLOT_POINTS = 2000
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _rows(text: str, delimiter: str = ",") -> tuple[list[str], list[list[str]]]:
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
    except csv.Error as e:
        raise ScellisError(f"bad CSV: {e}") from None
    if not rows:
        raise ScellisError("the file is empty; expected a header row")
    return [h.strip() for h in rows[0]], rows[1:]


def _is_number(cell: str) -> bool:
    if cell.strip().lower() in MISSING:
        return True
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def _times(cells: list[str]) -> tuple[str, list] | None:
    """``("iso" | "year", times)`` when every cell of a column reads as increasing times
    of that kind."""
    for fmt in ("iso", "year"):
        try:
            times = [parse_time(c, fmt) for c in cells]
        except (ValueError, OverflowError):
            continue
        if times and all(a < b for a, b in zip(times, times[1:])):
            return fmt, times
    return None


def _thin(n: int) -> list[int]:
    """At most PLOT_POINTS row indices spread evenly over ``n`` rows (a preview, not data)."""
    step = max(1, math.ceil(n / PLOT_POINTS))
    return list(range(0, n, step))


def load_table(name: str, text: str, column: str | None = None) -> dict:
    """A CSV's ``{kind, name, columns, numeric, datetime, frequency, rows, preview, last,
    series}``.

    ``numeric`` lists the columns whose every cell is a number or missing (``missing``
    maps each such column that has gaps to their row numbers); ``datetime``
    maps each column that reads as increasing times to its format, ``frequency`` to its
    spacing (``data.frequency``: daily, weekly...; None when irregular). ``series`` is the
    plot of ``column`` (the first numeric column by default): ``{column, x, y}``.
    """
    header, body = _rows(text)
    if not body:
        raise ScellisError(
            f"{name} has a header row ({', '.join(header)}) but no data rows: nothing to train on"
        )
    cols = {h: [r[i] if i < len(r) else "" for r in body] for i, h in enumerate(header)}
    numeric = [h for h, cells in cols.items() if cells and all(map(_is_number, cells))]
    dated = {h: t for h, cells in cols.items() if (t := _times(cells))}
    times = {h: fmt for h, (fmt, _) in dated.items()}
    value = column if column is not None else next((h for h in numeric if h not in times), None)
    if value is None and numeric:
        value = numeric[0]
    series = None
    if value is not None:
        if value not in numeric:
            raise ScellisError(f"column {value!r} is not numeric (numeric: {', '.join(numeric)})")
        idx = _thin(len(body))
        ys = [cols[value][i] for i in idx]
        series = {
            "column": value,
            "x": idx,
            "y": [None if c.strip().lower() in MISSING else float(c) for c in ys],
        }
    return {
        "kind": "csv",
        "name": name,
        "columns": header,
        "numeric": numeric,
        "datetime": times,
        "rows": len(body),
        "preview": [r[: len(header)] for r in body[:PREVIEW_ROWS]],
        "last": body[-1][: len(header)] if body else [],
        "series": series,
        "missing": _missing_rows(cols, numeric),
        "frequency": {h: frequency(t) for h, (_, t) in dated.items()},
    }


def _missing_rows(cols: dict[str, list[str]], numeric: list[str]) -> dict[str, list[int]]:
    """Each numeric column's missing cells as 1-based data row numbers (the header is 0):
    what the panel shows beside the ``missing`` policy that fills them."""
    out = {}
    for h in numeric:
        rows = [i + 1 for i, c in enumerate(cols[h]) if c.strip().lower() in MISSING]
        if rows:
            out[h] = rows
    return out


def load_text(name: str, text: str) -> dict:
    """A text file's ``{kind, name, chars, vocab, preview}`` (a char-level corpus)."""
    return {
        "kind": "text",
        "name": name,
        "chars": len(text),
        "vocab": len(set(text)),
        "preview": text[:400],
    }


def _save(folder: str, name: str, text: str) -> Path:
    safe = _SAFE.sub("_", Path(name).name).lstrip(".") or "data"
    path = Path(folder) / safe
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _csv_digest(data: dict, path: Path) -> tuple[str, dict]:
    cfg = csv_config({k: v for k, v in data.items() if k != "sha256"}, path)
    names = list(dict.fromkeys([*cfg.features, cfg.target]))
    table = read_table(path, names, cfg.datetime, cfg.datetime_format, cfg.delimiter)
    info = {"rows": len(table)}
    try:
        ds = load_csv(cfg)
        info.update(train_windows=len(ds.x_train), val_windows=len(ds.x_val))
    except ScellisError as e:  # the file is fine; the windowing options do not fit it
        info["warning"] = str(e)
    return dataset_digest(cfg, table), info


def _text_digest(data: dict, text: str) -> tuple[str, dict]:
    if "max_chars" in data:
        text = text[: int(data["max_chars"])]
    ds = text_dataset(
        text, int(data.get("context", 64)), data.get("stride"), data.get("val_fraction", 0.1)
    )
    return ds.digest, {"chars": len(text), "vocab": len(ds.vocab), "train_windows": len(ds.x_train)}


# the data options the panel edits, per format: a check and what it says when it fails
_OPTIONS = {
    "csv": {
        "window": (lambda v: isinstance(v, int) and v >= 1, "a whole number of rows, 1 or more"),
        "horizon": (lambda v: isinstance(v, int) and v >= 1, "a whole number of rows, 1 or more"),
        "val_fraction": (lambda v: isinstance(v, (int, float)) and 0 < v < 1, "between 0 and 1"),
        "normalise": (
            lambda v: v in ("standard", "zscore", "minmax", "none", "window", "change", "season"),
            "standard, minmax, none, window, change or season",
        ),
    },  # fmt: skip
    "text": {
        "val_fraction": (lambda v: isinstance(v, (int, float)) and 0 < v < 1, "between 0 and 1"),
    },
}


def _checked_options(fmt: str, options: dict | None) -> dict:
    known = _OPTIONS[fmt]
    for k, v in (options or {}).items():
        if k not in known:
            raise ScellisError(f"data option {k!r} is not one the data panel sets for {fmt}")
        ok, want = known[k]
        if isinstance(v, bool) or not ok(v):
            raise ScellisError(f"data option {k} must be {want} (got {v!r})")
    return dict(options or {})


def dataset_from(
    record: str,
    name: str,
    text: str,
    column: str | None = None,
    datetime: str | None = None,
    folder: str = "datasets",
    missing: str | None = None,
    options: dict | None = None,
) -> dict:
    """Save the file, point ``record``'s data section at it and write its sha256.

    A CSV needs ``column`` (the series, both input and target) and may name a
    ``datetime`` column and the ``missing`` policy (error, ffill, mean, drop); a file
    whose name does not end in ``.csv`` is text. ``options`` sets data options (a CSV's
    window, horizon, val_fraction, normalise; a text's val_fraction): a new window is
    the length of the record's inputs too, a new horizon its head's outputs. Returns
    ``{record, dataset: {name, source, format, hash, data, ...}}`` (``data``: the pinned
    data section); the record's other data options are kept, and they are part of the
    version.
    """
    doc = parse(record, "model.sml")
    data = doc.data.get("data") if isinstance(doc.data.get("data"), dict) else {}
    fmt = "csv" if name.lower().endswith(".csv") else "text"
    foreign = sorted(set(data) - (CSV_KEYS if fmt == "csv" else TEXT_KEYS))
    if foreign:
        other = "a text corpus" if fmt == "csv" else "a CSV series"
        raise ScellisError(
            f"this record's data section is for {other} ({', '.join(foreign)}); "
            f"a {'CSV' if fmt == 'csv' else 'text'} file needs a record made for it"
        )
    path = _save(folder, name, text)
    leaves_season = False
    updates: dict = {"source": str(path), "format": fmt, **_checked_options(fmt, options)}
    if fmt == "csv":
        if "features" in data or "target" in data:
            raise ScellisError(
                "data names features and target; set the column in the code view instead"
            )
        if not column:
            raise ScellisError("choose the value column of the CSV")
        if not datetime and "datetime" in data:
            raise ScellisError("the record's data names a datetime column; choose one")
        updates["column"] = column
        if missing:
            updates["missing"] = missing
        if datetime:
            fmts = load_table(name, text)["datetime"]
            if datetime not in fmts:
                raise ScellisError(f"column {datetime!r} does not read as increasing times")
            updates.update(datetime=datetime, datetime_format=fmts[datetime])
        advice = _advice(data, updates, path, column)
        if advice and advice["applied"]:
            updates["normalise"] = advice["normalise"]
            if advice["normalise"] == "season":
                updates["season"] = advice["season"]
        if updates.get("normalise") == "season" and "season" not in data:
            updates["season"] = _season_for(data, updates, path, column)
        # the season belongs to the season mode alone: leaving that mode drops it
        leaves_season = (
            "season" in data and updates.get("normalise", data.get("normalise")) != "season"
        )
        if leaves_season:
            data = {k: v for k, v in data.items() if k != "season"}
        digest, info = _csv_digest({**data, **updates}, path)
        if advice:
            info["advice"] = advice
    else:
        digest, info = _text_digest({**data, **updates}, text)
    updates["sha256"] = digest
    before = dict(data)
    if "data" not in doc.data:
        doc.set(("data",), updates)
    else:
        if leaves_season:
            doc.remove_key(("data", "season"))
        for k, v in updates.items():
            doc.set(("data", k), v)
    follow_data(doc, before)  # a new window or horizon: the inputs and the head follow
    ds = {"name": name, "source": str(path), "format": fmt, "hash": digest,
          "data": {**data, **updates}, **info}  # fmt: skip
    return {"record": doc.text, "dataset": ds}


def _advice(data: dict, updates: dict, path: Path, column: str) -> dict | None:
    """A newly dropped CSV's normalisation by the trend test (``data.advice``) with its
    reason: ``{normalise, why, applied}``. It is applied where the record names none
    (a record's own choice, or the data panel's, stands and the advice is only told);
    None when the panel sets one, the record already reads this file, or the series is
    too short to judge."""
    if "normalise" in updates or data.get("source") == updates["source"]:
        return None
    try:
        got = advise(path, column, _horizon(data), window=_window(data, updates))
    except ScellisError:
        return None
    return {**_told(got), "applied": "normalise" not in data}


def _horizon(data: dict) -> int:
    horizon = data.get("horizon", 1)
    return horizon if isinstance(horizon, int) and horizon > 0 else 1


def _window(data: dict, updates: dict) -> int:
    """The input window the pinned record will have (the reader's default if none)."""
    window = updates.get("window", data.get("window", CSVConfig.length))
    return window if isinstance(window, int) else CSVConfig.length


def _season_for(data: dict, updates: dict, path: Path, column: str) -> int:
    """The season the data panel's ``normalise: season`` differences by: the series' own."""
    try:
        season = advise(path, column, _horizon(data))["season"]
    except ScellisError:
        season = None
    window = _window(data, updates)
    if season is None or season >= window:
        shown = "no season shows in this series" if season is None else (
            f"its season ({season} rows) does not fit in the window ({window} rows)")  # fmt: skip
        raise ScellisError(f"normalise season differences by one season, but {shown}")
    return season


def _told(got: dict) -> dict:
    """What the data panel says of an advice: the normalisation and the season, each
    with its reason."""
    return {"normalise": got["data"]["normalise"], "why": got["why"]["normalise"],
            "season": got["season"], "season_why": got["why"]["season"]}  # fmt: skip


def advice_of(name: str, text: str, column: str | None = None, horizon: int = 1) -> dict | None:
    """The advice for a CSV not pinned yet (what the data panel shows on a drop):
    ``{normalise, why, season, season_why}``; None when the series is too short to
    judge. The text goes through a scratch file: the advice reads files as the CLI does."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        path.write_text(text, encoding="utf-8")
        try:
            return _told(advise(path, column, max(int(horizon), 1)))
        except ScellisError:
            return None


def data_section(record: str) -> dict:
    """The record's data section as it stands ({} when it has none or does not parse):
    what the data panel's option controls start from."""
    try:
        data = parse(record, "model.sml").data.get("data")
    except ScellisError:
        return {}
    return dict(data) if isinstance(data, dict) else {}


def record_data(record: str) -> dict | None:
    """A preview of the file the record trains on (a bundled example's, or one pinned
    before), as ``load_table`` / ``load_text`` describe a picked file; None when the
    record names no file that can be read: the data panel shows it for a freshly picked
    example, where an earlier file's preview would otherwise stand."""
    data = data_section(record)
    source = data.get("source")
    if not isinstance(source, str):
        return None
    try:
        path = source_path(source)
        text = read_file(path, limit=OWN_DATA_CAP).decode("utf-8")
        fmt = data.get("format") or ("csv" if path.suffix.lower() in (".csv", ".tsv") else "text")
        if fmt != "csv":
            return load_text(path.name, text)
        column = data.get("column") or data.get("target")
        return load_table(path.name, text, column if isinstance(column, str) else None)
    except (ScellisError, UnicodeDecodeError):
        return None


def rehash(doc: Document) -> None:
    """After an edit of the data options: re-pin ``sha256`` (they are part of the version).

    Only a record that pins a version and whose file is readable is touched; any other
    problem is left to validation and to the run, which report it.
    """
    data = doc.data.get("data")
    if not isinstance(data, dict) or "sha256" not in data:
        return
    try:
        path = source_path(data.get("source"))
        if (data.get("format") or ("csv" if path.suffix.lower() == ".csv" else "text")) == "csv":
            digest = _csv_digest(data, path)[0]
        else:
            digest = _text_digest(data, read_text(path))[0]
    except ScellisError:
        return
    if digest != data["sha256"]:
        doc.set(("data", "sha256"), digest)
