"""CSV tables (data layer): chosen columns parsed to floats, with file:line positions.

``read_table`` keeps only the selected columns. A cell that is empty or one of
``MISSING`` (case-insensitive) is missing and becomes ``None``; any other cell must be a
finite number. An optional datetime column is parsed (ISO 8601, a bare year, or a
``strptime`` pattern) and must strictly increase. Errors are ScellisError
``file:line: message``, line 1 being the header.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime

from ..base.errors import ScellisError
from .text import read_text

MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})


@dataclass
class Table:
    """Parsed columns (floats or None for missing), their source lines, optional times."""

    path: str
    columns: dict[str, list[float | None]]
    lines: list[int]  # the file line of every row
    times: list[datetime] | None = None

    def __len__(self) -> int:
        return len(self.lines)

    def where(self, row: int) -> str:
        return f"{self.path}:{self.lines[row]}"


def parse_time(text: str, fmt: str) -> datetime:
    """``fmt``: ``iso`` (datetime.fromisoformat), ``year`` (an integer year) or a pattern."""
    text = text.strip()
    if fmt == "iso":
        return datetime.fromisoformat(text)
    if fmt == "year":
        return datetime(int(text), 1, 1)
    return datetime.strptime(text, fmt)


def _number(cell: str, where: str, name: str) -> float | None:
    if cell.strip().lower() in MISSING:
        return None
    try:
        v = float(cell)
    except ValueError:
        # a spreadsheet's "1,234.5" or "12,5": numbers are read as Python writes them
        hint = " (write numbers without thousands separators or decimal commas)"
        raise ScellisError(
            f"{where}: {name!r} is {cell!r}, not a number{hint if ',' in cell else ''}"
        ) from None
    if not math.isfinite(v):
        raise ScellisError(f"{where}: {name!r} is {cell!r}, not a finite number")
    return v


def _header(path: str, reader, wanted: list[str]) -> list[int]:
    try:
        header = next(reader)
    except StopIteration:
        raise ScellisError(f"{path}:1: the file is empty; expected a header row") from None
    names = [h.strip() for h in header]
    for name in wanted:
        if name not in names:
            found = ", ".join(map(repr, names))  # as written: a header may hold anything
            # one column holding another separator: the file is split by that one
            seps = [d for d in ";\t|," if len(names) == 1 and d in names[0]]
            hint = f"; set data.delimiter: {seps[0]!r}" if seps else ""
            raise ScellisError(f"{path}:1: no column {name!r} (found: {found:.300}){hint}")
        if names.count(name) > 1:
            raise ScellisError(f"{path}:1: column {name!r} appears twice in the header")
    return [names.index(n) for n in wanted]


def read_table(
    path,
    columns: list[str],
    datetime_column: str | None = None,
    datetime_format: str = "iso",
    delimiter: str = ",",
) -> Table:
    """The selected numeric ``columns`` (and ``datetime_column``) of a CSV file with a header."""
    path = str(path)
    columns = list(dict.fromkeys(columns))
    wanted = columns + ([datetime_column] if datetime_column else [])
    out: dict[str, list[float | None]] = {c: [] for c in columns}
    lines: list[int] = []
    times: list[datetime] = []
    text = read_text(path)  # unreadable files and bad UTF-8 are refused with positions
    try:
        with io.StringIO(text, newline="") as f:
            reader = csv.reader(f, delimiter=delimiter)
            idx = _header(path, reader, wanted)
            width = max(idx) + 1
            for row in reader:
                line = reader.line_num  # a quoted newline spans lines: this is the last one
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank lines carry no row
                where = f"{path}:{line}"
                if len(row) < width:
                    raise ScellisError(f"{where}: {len(row)} fields; the header needs {width}")
                for name, i in zip(columns, idx):
                    out[name].append(_number(row[i], where, name))
                if datetime_column:
                    times.append(_time(row[idx[-1]], where, datetime_column, datetime_format))
                    if len(times) > 1 and times[-1] <= times[-2]:
                        # the first two rows going back in time: an export newest first
                        hint = "; the file lists the newest first: sort it oldest first"
                        raise ScellisError(
                            f"{where}: {datetime_column!r} {times[-1].isoformat()} is not after "
                            f"{times[-2].isoformat()} ({path}:{lines[-1]}); times must increase"
                            + (hint if len(times) == 2 and times[1] < times[0] else "")
                        )
                lines.append(line)
    except csv.Error as e:
        raise ScellisError(f"{path}: bad CSV: {e}") from None
    if not lines:
        raise ScellisError(f"{path}:2: no data rows after the header")
    return Table(path, out, lines, times if datetime_column else None)


def _time(cell: str, where: str, name: str, fmt: str) -> datetime:
    if cell.strip().lower() in MISSING:
        raise ScellisError(f"{where}: {name!r} is missing; a datetime cell cannot be filled")
    try:
        return parse_time(cell, fmt)
    except ValueError:
        raise ScellisError(
            f"{where}: {name!r} is {cell!r}, not a datetime ({fmt}); set data.datetime_format "
            "to its strptime pattern (e.g. '%d/%m/%Y %H:%M')"
        ) from None
