"""A CSV's layout read off its first rows (data layer): the delimiter, whether the
first row names the columns, and the pattern of a date column.

``scellis init --data`` writes what it finds into the record (``delimiter``,
``datetime_format``), so the reader itself stays strict: a record says how its file
is laid out, and the file is read exactly that way.

* The delimiter is the one of ``, ; tab |`` that splits the header into the most
  fields while every one of the first rows has that many too. A spreadsheet set to a
  decimal comma exports ``;`` (its numbers hold the commas), so a comma count alone
  would pick the wrong one.
* A first row whose cells all read as numbers or dates holds data, not names.
* Dates: ISO 8601 or a bare year (most rows one after the one before: a running
  total also counts up in whole numbers) first, then the day-first, month-first and other
  common patterns (``strptime``). A column may read under more than one
  (``01/02/2015``: the 1st of February or the 2nd of January); the reading whose gaps
  are the most even is taken (monthly rows are 28 to 31 days apart, while the wrong
  reading of them jumps from day 12 of one month to day 1 of the next year).
"""

from __future__ import annotations

import csv
import io
import math

from .table import MISSING, parse_time

DELIMITERS = (",", ";", "\t", "|")
SAMPLE_ROWS = 20  # rows that must agree with the header's field count
_CLOCKS = ("", " %H:%M", " %H:%M:%S", "T%H:%M", "T%H:%M:%S")
_DAYS = ("%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%d-%m-%Y", "%m-%d-%Y", "%Y/%m/%d", "%Y.%m.%d")
TIME_FORMATS = ("iso", "year", "%Y-%m", "%Y/%m", "%b %Y", "%b-%Y", "%B %Y") + tuple(
    day + clock for day in _DAYS for clock in _CLOCKS
)


def delimiter_of(text: str) -> str:
    """The field delimiter of the CSV ``text`` (see the module note); ``,`` by default."""
    lines = [line for line in text.splitlines()[: SAMPLE_ROWS + 1] if line.strip()]
    best, most = ",", 1
    for d in DELIMITERS:
        try:
            counts = {len(r) for r in csv.reader(lines, delimiter=d)}
        except csv.Error:
            continue
        if len(counts) == 1 and (n := counts.pop()) > most:
            best, most = d, n
    return best


def is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def holds_data(header: list[str]) -> bool:
    """Whether a first row ``header`` is a row of values rather than column names."""
    cells = [h for h in header if h.strip()]
    return bool(cells) and all(is_number(h) or time_format([h]) for h in cells)


def time_format(cells: list[str]) -> str | None:
    """The format every cell of ``cells`` reads under as strictly increasing times,
    with the most even gaps when several do (see the module note); None if none."""
    if not cells or any(c.strip().lower() in MISSING for c in cells):
        return None  # a date cell cannot be filled: such a column is no time axis
    found = []
    for fmt in TIME_FORMATS:
        try:
            times = [parse_time(c, fmt) for c in cells]
        except (ValueError, OverflowError):
            continue
        if fmt == "year" and not _yearly(times):
            continue  # increasing whole numbers (a running total) are no years
        if all(a < b for a, b in zip(times, times[1:])):
            found.append((_unevenness(times), fmt))
        if fmt in ("iso", "year") and found:
            return fmt  # unambiguous: no other reading of them is wanted
    return min(found)[1] if found else None


def _yearly(times) -> bool:
    """Whether most of ``times`` are one year after the one before."""
    gaps = sorted(b.year - a.year for a, b in zip(times, times[1:]))
    return not gaps or gaps[len(gaps) // 2] == 1


def _unevenness(times) -> float:
    """The longest gap over the shortest (1 for evenly spaced times)."""
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    return max(gaps) / min(gaps) if gaps else 1.0


def rows_of(text: str, delimiter: str) -> list[list[str]]:
    return [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if r]
